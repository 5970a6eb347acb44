"""One helper that exercises every layer the same way (in the spirit of keras-hub's `run_layer_test`)."""

import keras
import numpy as np


def run_layer_test(layer_cls, init_kwargs, input_data, expected_output_shape, expected_num_weights,
                   call_kwargs=None, tmp_path=None):
    """Shape, weight count, get_config/from_config round trip, `.keras` save/load equality and one fit step.

    `input_data` is a list of positional arrays; `call_kwargs` keyword arrays (e.g. padding_mask).
    """
    call_kwargs = call_kwargs or {}
    layer = layer_cls(**init_kwargs)
    output = layer(*input_data, **call_kwargs)
    assert tuple(output.shape) == tuple(expected_output_shape)
    assert len(layer.weights) == expected_num_weights

    config = layer.get_config()
    clone = layer_cls.from_config(config)
    assert clone.get_config() == config
    clone(*input_data, **call_kwargs)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(clone(*input_data, **call_kwargs)),
                               keras.ops.convert_to_numpy(output), atol=1e-6)

    # Wrap in a functional model so the layer is saved, reloaded and trained as users would.
    inputs = [keras.Input(shape=np.shape(array)[1:], dtype=str(np.asarray(array).dtype)) for array in input_data]
    kwarg_inputs = {name: keras.Input(shape=np.shape(array)[1:], dtype=str(np.asarray(array).dtype))
                    for name, array in call_kwargs.items()}
    outputs = layer_cls(**init_kwargs)(*inputs, **kwarg_inputs)
    model = keras.Model([*inputs, *kwarg_inputs.values()], outputs)
    model_inputs = [*input_data, *call_kwargs.values()]
    before = model.predict(model_inputs, verbose=0)
    if tmp_path is not None:
        path = str(tmp_path / f"{layer_cls.__name__}.keras")
        model.save(path)
        reloaded = keras.saving.load_model(path)
        np.testing.assert_array_equal(reloaded.predict(model_inputs, verbose=0), before)

    model.compile(optimizer="sgd", loss="mse")
    weights_before = [np.array(w) for w in model.get_weights()]
    model.fit(model_inputs, np.zeros_like(before), epochs=1, batch_size=len(before), verbose=0)
    changed = [not np.array_equal(a, np.array(b)) for a, b in zip(weights_before, model.get_weights())]
    assert any(changed), "one fit step changed no weight"
    return output
