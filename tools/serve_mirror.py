"""A local mirror of the course's datasets, built from a data folder, for machines without the internet.

    python tools/serve_mirror.py --data ../shared/data                       # serve; prints the two variables
    python tools/serve_mirror.py --data ../shared/data --hide-shared -- make test   # run a command against it

From a folder laid out as `bertlib.io.downloads` expects (`glue/SST-2/train.tsv`, ...), it rebuilds each download
at the path of its canonical URL (`/glue/data/SST-2.zip`, `/SQuAD-explorer/dataset/dev-v1.1.json`), holding
the files the folder has, and serves them on 127.0.0.1. A rebuilt zip cannot hash like the original, so it
writes a registry (`registry.json`, passed as BERTLIB_DATA_REGISTRY) with the rebuilt archives' sha256; the
files inside must hash exactly as in the real registry, or the build stops. A learner gets the same bytes
through this mirror as from the canonical hosts.

With a command after `--`, it runs that command with BERTLIB_DATA_MIRROR, BERTLIB_DATA_REGISTRY and a fresh
BERTLIB_CACHE set (and, with --hide-shared, with BERTLIB_DATA set empty, so that neither the Makefile nor the tests
add ../shared/data), and exits with the command's status.
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the checkout, for `tools`

from bertlib.io import downloads  # noqa: E402
from tools.repo_paths import shared_path  # noqa: E402


def build_mirror(data_dir, out_dir, stand_ins=None):
    """Lay out `out_dir` like the canonical hosts from the files under `data_dir`; returns the registry written
    to `out_dir/registry.json` (the datasets found, with the rebuilt downloads' hashes).

    `stand_ins` maps (dataset, file) to a path served in that file's place although it is not the distributed
    file (CI holds a 14-question extract of SQuAD v2.0's dev set, not the whole file); the registry says so.
    """
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    stand_ins = {key: Path(path) for key, path in (stand_ins or {}).items()}
    real = downloads.load_registry()
    for name, file in stand_ins:
        if file not in real["datasets"].get(name, {}).get("files", {}):
            raise ValueError(f"--stand-in {name}/{file}: the registry has no file {file!r} in a dataset {name!r}.")
    mirrored = {}
    for name, spec in real["datasets"].items():
        folder = data_dir / spec["folder"]
        present = {file: folder / file for file in spec["files"] if (folder / file).is_file()}
        present.update({file: path for (dataset, file), path in stand_ins.items() if dataset == name})
        if not present or spec.get("build"):  # MRPC is built from sources a data folder does not hold
            continue
        for file, path in present.items():
            expected, actual = spec["files"][file], downloads.sha256(path)
            if (name, file) in stand_ins:
                continue
            if expected is not None and actual != expected:
                raise ValueError(f"{path} is not the distributed file: sha256 {actual}, the registry has {expected}.")
        rebuilt = []
        for download in spec["downloads"]:
            target = out_dir / urllib.parse.urlsplit(download["url"]).path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if "members" in download:
                members = {file: member for file, member in download["members"].items() if file in present}
                if not members:
                    continue
                with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zipped:
                    for file, member in members.items():
                        zipped.write(present[file], member)
                rebuilt.append({**download, "members": members})
            elif download["file"] in present:
                shutil.copyfile(present[download["file"]], target)
                rebuilt.append(dict(download))
            else:
                continue
            stood_in = [file for file in present if (name, file) in stand_ins]
            rebuilt[-1].update(sha256=downloads.sha256(target), size=target.stat().st_size,
                                 hash_source=f"rebuilt by tools/serve_mirror.py from {data_dir}"
                                 + (f"; stand-in, not the distributed file: {', '.join(stood_in)}" if stood_in else ""))
        mirrored[name] = {**spec, "downloads": rebuilt,
                          "files": {file: downloads.sha256(path) for file, path in present.items()}}
    registry = {"about": [f"Downloads rebuilt from {data_dir} by tools/serve_mirror.py; the files inside hash as "
                          "in bertlib/io/registry.json."], "groups": {}, "datasets": mirrored}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "registry.json").write_text(json.dumps(registry, indent=2) + "\n", encoding="utf-8")
    return registry


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def serve(folder, port=0, handler=_QuietHandler):
    """Serve `folder` over HTTP on 127.0.0.1 from a daemon thread; returns `(server, base_url)`.
    Stop it with `server.shutdown(); server.server_close()`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=shared_path() / "data",
                        help="folder to mirror, laid out as bertlib.io.downloads expects "
                             "(default: $BERTLIB_SHARED/data, else ../shared/data)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--stand-in", action="append", default=[], metavar="NAME/FILE=PATH",
                        help="serve PATH as FILE of dataset NAME although it is not the distributed file, e.g. "
                             "squad_v2/dev-v2.0.json=../shared/data/squad/dev-v2.0-small.json (repeatable)")
    parser.add_argument("--hide-shared", action="store_true",
                        help="run the command as on a fresh clone: ../shared is not looked at")
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if not args.data.is_dir():
        parser.error(f"--data {args.data} is not a folder")
    stand_ins = {}
    for value in args.stand_in:
        key, _, path = value.partition("=")
        name, _, file = key.partition("/")
        if not (name and file and path) or not Path(path).is_file():
            parser.error(f"--stand-in {value!r}: expected NAME/FILE=PATH with PATH an existing file")
        stand_ins[(name, file)] = path
    with tempfile.TemporaryDirectory(prefix="bertlib-mirror-") as scratch:
        registry = build_mirror(args.data, Path(scratch) / "mirror", stand_ins)
        server, url = serve(Path(scratch) / "mirror", args.port)
        variables = {"BERTLIB_DATA_MIRROR": url, "BERTLIB_DATA_REGISTRY": str(Path(scratch) / "mirror" / "registry.json")}
        print(f"Mirroring {', '.join(registry['datasets'])} from {args.data} at {url}", flush=True)
        try:
            if not command:
                print("".join(f"export {key}={value}\n" for key, value in variables.items()) + "Ctrl-C stops it.")
                threading.Event().wait()
            environment = {**os.environ, **variables, "BERTLIB_CACHE": str(Path(scratch) / "cache")}
            if args.hide_shared:  # set and empty: the Makefile and tests/conftest.py then add no shared/data
                environment["BERTLIB_SHARED"] = str(Path(scratch) / "no-shared")
                environment["BERTLIB_DATA"] = ""
            return subprocess.call(command, env=environment)
        except KeyboardInterrupt:
            return 130
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    sys.exit(main())
