"""The base of the models built on a `BertBackbone`: the pretrainer and the fine-tuning tasks (keras-hub's `Task`)."""

import keras


class BackboneModel(keras.Model):
    """A functional model on a `BertBackbone`, kept as `self.backbone`. Its config is the backbone's, serialized,
    plus the constructor arguments named in `_fields`; `from_config` rebuilds the backbone first."""

    _fields = ()

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone), "name": self.name,
                "trainable": self.trainable, **{field: getattr(self, field) for field in self._fields}}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)
