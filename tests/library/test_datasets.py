"""Finding and fetching datasets by name (`bertlib.io.downloads`), with a local HTTP server standing in for a mirror.

Nothing here touches the internet: the mirror tests serve archives they build themselves, described by a test
registry (BERTLIB_DATA_REGISTRY); the real registry is checked for its URLs and against CI's copies of the files.
"""

import hashlib
import http.server
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse
import zipfile
from pathlib import Path

import pytest

from bertlib import cli
from bertlib.io import downloads
from tools import serve_mirror
from tools.repo_paths import REPO_ROOT, shared_dir

TOY_URL = "https://dl.fbaipublicfiles.com/glue/data/TOY.zip"  # served by the test host at the same path
TOY_FILES = {"train.tsv": "sentence\tlabel\n" + "".join(f"line {i} of a toy task\t{i % 2}\n" for i in range(6000)),
             "dev.tsv": "sentence\tlabel\nthe dev split\t1\n"}


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


class Host:
    """Files laid out like the canonical hosts, served on 127.0.0.1. `modes` holds what the next requests get:
    "good", "cut" (half the bytes, then the connection closes), "stall" (half the bytes, then nothing), "silent"
    (no answer at all) or "slow" (one byte every `slow_interval` seconds)."""

    def __init__(self, root):
        self.root, self.requests, self.modes, self.slow_interval = Path(root), [], [], 3.0
        self.stalled, self.release = threading.Event(), threading.Event()
        host = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                host.requests.append(self.path)
                path = host.root / urllib.parse.urlsplit(self.path).path.lstrip("/")
                if not path.is_file():
                    self.send_error(404)
                    return
                data = path.read_bytes()
                mode = host.modes.pop(0) if host.modes else "good"
                if mode == "silent":
                    host.release.wait(60)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if mode == "slow":
                    for byte in data:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        if host.release.wait(host.slow_interval):
                            break
                    return
                self.wfile.write(data if mode == "good" else data[: len(data) // 2])
                self.wfile.flush()
                if mode == "stall":
                    host.stalled.set()
                    host.release.wait(60)
                self.close_connection = True

            def log_message(self, format, *args):  # noqa: A002
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def put(self, url, data):
        path = self.root / urllib.parse.urlsplit(url).path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def _toy_zip(files=TOY_FILES):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, text in files.items():
            zipped.writestr(f"TOY/{name}", text)
    return buffer.getvalue()


def _write_registry(path, archive, files=TOY_FILES):
    entry = {"title": "a toy GLUE-like task", "folder": "glue/TOY",
             "downloads": [{"url": TOY_URL, "size": len(archive), "sha256": _sha256(archive),
                            "members": {name: f"TOY/{name}" for name in files}}],
             "files": {name: _sha256(text.encode()) for name, text in files.items()}}
    path.write_text(json.dumps({"datasets": {"toy": entry}, "groups": {"toys": ["toy"]}}), encoding="utf-8")


@pytest.fixture
def places(tmp_path, monkeypatch):
    """An isolated machine: no BERTLIB_DATA, an empty cache, the toy registry, no retries."""
    monkeypatch.delenv("BERTLIB_DATA", raising=False)
    monkeypatch.delenv("BERTLIB_DATA_MIRROR", raising=False)
    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERTLIB_DATA_REGISTRY", str(tmp_path / "registry.json"))
    monkeypatch.setattr(downloads, "DOWNLOAD_RETRIES", 0)
    archive = _toy_zip()
    _write_registry(tmp_path / "registry.json", archive)
    return {"root": tmp_path, "cache": tmp_path / "cache", "archive": archive}


@pytest.fixture
def host(tmp_path, monkeypatch, places):
    """The mirror: serves the toy archive at the path of its canonical URL."""
    served = Host(tmp_path / "host")
    served.put(TOY_URL, places["archive"])
    monkeypatch.setenv("BERTLIB_DATA_MIRROR", served.url)
    yield served
    served.stop()


def _assert_toy_files(folder):
    for name, text in TOY_FILES.items():
        assert (Path(folder) / name).read_bytes() == text.encode()


def _leftovers(cache):
    return sorted(str(path.relative_to(cache)) for path in cache.rglob("*") if path.is_file())


# Fetching through a mirror ------------------------------------------------------------------------------------

def test_first_fetch_fills_an_empty_cache(places, host):
    folder = downloads.find("toy")
    assert folder == places["cache"] / "glue" / "TOY"
    _assert_toy_files(folder)
    assert host.requests == ["/glue/data/TOY.zip"]  # the canonical path, on the mirror's host
    assert _leftovers(places["cache"]) == ["glue/TOY/dev.tsv", "glue/TOY/train.tsv"]  # no archive, no staging


def test_second_run_uses_the_cache_with_the_server_stopped(places, host):
    downloads.find("toy")
    host.stop()
    assert downloads.find("toy") == places["cache"] / "glue" / "TOY"
    assert len(host.requests) == 1


def test_a_corrupted_download_is_rejected_by_its_hash(places, host):
    corrupted = bytearray(places["archive"])
    corrupted[len(corrupted) // 2] ^= 0xFF
    host.put(TOY_URL, bytes(corrupted))
    with pytest.raises(downloads.DataIntegrityError) as error:
        downloads.find("toy")
    message = str(error.value)
    assert "TOY.zip" in message and _sha256(places["archive"]) in message
    assert _leftovers(places["cache"]) == []


def test_a_file_inside_the_archive_is_checked_too(places, host):
    tampered = {**TOY_FILES, "dev.tsv": "sentence\tlabel\nnot the dev split\t0\n"}
    archive = _toy_zip(tampered)
    host.put(TOY_URL, archive)
    registry = json.loads((places["root"] / "registry.json").read_text())
    registry["datasets"]["toy"]["downloads"][0]["sha256"] = _sha256(archive)  # the archive itself passes
    (places["root"] / "registry.json").write_text(json.dumps(registry))
    with pytest.raises(downloads.DataIntegrityError, match=r"toy: dev\.tsv .*expected sha256 "
                       + _sha256(TOY_FILES["dev.tsv"].encode())):
        downloads.find("toy")
    assert _leftovers(places["cache"]) == []


def test_a_download_cut_halfway_is_never_used_and_a_rerun_gets_the_good_file(places, host):
    host.modes = ["cut"]
    with pytest.raises(downloads.DataNotFoundError, match="download failed"):
        downloads.find("toy")
    assert _leftovers(places["cache"]) == []
    _assert_toy_files(downloads.find("toy"))


def test_a_cut_download_is_retried(places, host, monkeypatch):
    monkeypatch.setattr(downloads, "DOWNLOAD_RETRIES", 1)
    host.modes = ["cut"]
    _assert_toy_files(downloads.find("toy"))
    assert len(host.requests) == 2


def test_a_killed_download_leaves_no_half_file(places, host):
    host.modes = ["stall"]
    fetching = subprocess.Popen([sys.executable, "-c", "from bertlib.io import downloads; downloads.find('toy')"],
                                env=os.environ.copy(), cwd=REPO_ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert host.stalled.wait(60), "the download never started"
    finally:
        fetching.send_signal(signal.SIGKILL)
        fetching.wait()
    host.release.set()
    assert not (places["cache"] / "glue" / "TOY").exists()
    assert downloads.locate("toy") is None  # what the killed run left is not taken for the dataset
    _assert_toy_files(downloads.find("toy"))


# Slow, stalled and silent hosts ----------------------------------------------------------------------------------

def test_a_mirror_sending_one_byte_every_3_seconds_is_given_up(places, host, monkeypatch, capsys):
    """pooch's own timeout is per socket read, which a byte every 3 s never trips; bertlib's floor on speed does.
    The floor is lowered to 10 bytes/s over 6 s here, so the test takes seconds, not minutes."""
    monkeypatch.setattr(downloads, "SLOW_WINDOW_S", 6)
    monkeypatch.setattr(downloads, "MIN_BYTES_PER_S", 10)
    host.modes = ["slow"]
    assert cli.main(["download", "toy"]) == 2
    message = capsys.readouterr().err
    assert f"bertlib download: error: {host.url}/glue/data/TOY.zip is too slow: " in message
    assert "under bertlib's floor of 10 bytes/s over 6 s" in message and "BERTLIB_DATA_MIRROR" in message
    assert f"of {len(places['archive'])} bytes" in message
    assert _leftovers(places["cache"]) == []


def test_a_stalled_transfer_times_out_on_reading(places, host, monkeypatch):
    monkeypatch.setattr(downloads, "READ_TIMEOUT_S", 1)
    host.modes = ["stall"]
    with pytest.raises(downloads.DownloadTimeout, match=re.escape(f"{host.url}/glue/data/TOY.zip stalled: nothing "
                                                                 "for 1 s (read timeout) after ")):
        downloads.fetch("toy")
    assert _leftovers(places["cache"]) == []


def test_a_host_that_never_answers_times_out(places, host, monkeypatch):
    monkeypatch.setattr(downloads, "READ_TIMEOUT_S", 1)
    host.modes = ["silent"]
    with pytest.raises(downloads.DownloadTimeout, match=re.escape(f"{host.url}/glue/data/TOY.zip: connected, but the "
                                                                 "host sent no answer for 1 s (read timeout).")):
        downloads.fetch("toy")


def test_a_host_that_never_accepts_the_connection_times_out(places, monkeypatch):
    """A listening socket whose accept queue is full: the kernel drops further connection attempts unanswered."""
    monkeypatch.setattr(downloads, "CONNECT_TIMEOUT_S", 1)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        fillers = []
        for _ in range(8):  # fill the accept queue; none of these is ever accepted
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
            pytest.skip("this kernel answers connections beyond a full accept queue")
        except OSError:
            pass
        monkeypatch.setenv("BERTLIB_DATA_MIRROR", f"http://127.0.0.1:{port}")
        try:
            with pytest.raises(downloads.DownloadTimeout, match=re.escape(
                    f"http://127.0.0.1:{port}/glue/data/TOY.zip: no connection within 1 s (connect timeout).")):
                downloads.fetch("toy")
        finally:
            for filler in fillers:
                filler.close()


# Downloads stay in the cache ----------------------------------------------------------------------------------

def _entry(archive, **changes):
    entry = {"title": "a toy", "folder": "glue/TOY",
             "downloads": [{"url": TOY_URL, "sha256": _sha256(archive),
                            "members": {name: f"TOY/{name}" for name in TOY_FILES}}],
             "files": {name: _sha256(text.encode()) for name, text in TOY_FILES.items()}}
    for key, value in changes.items():
        if key in ("members", "url", "file"):
            entry["downloads"][0][key] = value
        else:
            entry[key] = value
    return entry


@pytest.mark.parametrize("changes, what", [
    (dict(members={"../../escaped.tsv": "TOY/train.tsv", "dev.tsv": "TOY/dev.tsv"}), "archive member target"),
    (dict(files={"../../escaped.tsv": None}), "file"),
    (dict(folder="../../outside"), "folder"),
    (dict(folder="glue/../../../outside"), "folder"),
    (dict(folder="/tmp/bertlib-escape-test"), "folder"),
    (dict(folder="glue/.hidden"), "folder"),
    (dict(url="https://dl.fbaipublicfiles.com/glue/data/.."), "a download URL ending in"),
    (dict(url="https://dl.fbaipublicfiles.com/glue/data/%2e%2e"), "a download URL ending in"),
    (dict(file="/etc/escaped"), "download file"),
])
def test_a_registry_cannot_write_outside_the_cache(places, host, monkeypatch, capsys, changes, what):
    home = places["root"] / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    registry = places["root"] / "registry.json"
    registry.write_text(json.dumps({"datasets": {"toy": _entry(places["archive"], **changes)}}), encoding="utf-8")
    before = sorted(str(path) for path in places["root"].rglob("*"))
    with pytest.raises(ValueError) as error:
        downloads.load_registry()
    message = str(error.value)
    assert message.startswith(f"BERTLIB_DATA_REGISTRY={registry}: dataset 'toy' has {what} ")
    assert "expected a plain relative" in message and "It was not used." in message
    assert cli.main(["download", "toy"]) == 2  # refused, not "downloaded"
    assert f"bertlib download: error: {message}" in capsys.readouterr().err
    assert sorted(str(path) for path in places["root"].rglob("*")) == before  # nothing written anywhere
    assert host.requests == []
    assert not Path("/tmp/bertlib-escape-test").exists()


def test_a_link_in_the_cache_that_points_out_is_refused(places, host, capsys):
    outside = places["root"] / "outside"
    outside.mkdir()
    places["cache"].mkdir()
    (places["cache"] / "glue").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match=re.escape(f"{places['cache'] / 'glue' / 'TOY'} resolves to "
                                                   f"{outside / 'TOY'}, outside the cache folder {places['cache']}")):
        downloads.fetch("toy")
    assert cli.main(["download", "toy"]) == 2
    assert "a link there points out of the cache" in capsys.readouterr().err
    assert list(outside.iterdir()) == [] and host.requests == []


# Lookup order and errors --------------------------------------------------------------------------------------

def _put_toy(root, marker):
    folder = root / "glue" / "TOY"
    folder.mkdir(parents=True, exist_ok=True)
    for name in TOY_FILES:
        (folder / name).write_text(marker)
    return folder


def test_lookup_order_named_folders_in_order_then_cache_then_download(places, host, monkeypatch):
    root = places["root"]
    named, shared, cached = _put_toy(root / "mine", "mine"), _put_toy(root / "shared" / "data", "shared"), \
        _put_toy(places["cache"], "cache")
    monkeypatch.setenv("BERTLIB_DATA", os.pathsep.join([str(root / "mine"), "", str(root / "shared" / "data")]))
    assert downloads.find("toy") == named
    shutil.rmtree(named)
    assert downloads.find("toy") == shared
    shutil.rmtree(shared)
    assert downloads.find("toy") == cached
    (cached / "dev.tsv").unlink()  # a cache entry counts only when complete
    assert host.requests == []
    _assert_toy_files(downloads.find("toy"))
    assert len(host.requests) == 1


def test_a_folder_you_name_may_hold_only_the_files_you_use(places, monkeypatch):
    folder = places["root"] / "mine" / "glue" / "TOY"
    folder.mkdir(parents=True)
    (folder / "dev.tsv").write_text(TOY_FILES["dev.tsv"])
    monkeypatch.setenv("BERTLIB_DATA", str(places["root"] / "mine"))
    assert downloads.find("toy", download=False) == folder


def test_bertlib_data_may_be_the_glue_download_folder_itself(places, monkeypatch):
    folder = _put_toy(places["root"] / "mine", "mine")
    glue_data = places["root"] / "glue_data"
    folder.parent.rename(glue_data)
    monkeypatch.setenv("BERTLIB_DATA", str(glue_data))
    assert downloads.find("toy", download=False) == glue_data / "TOY"


def test_offline_error_names_the_dataset_every_place_the_url_and_the_command(places, monkeypatch):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("BERTLIB_DATA_MIRROR", closed)
    monkeypatch.setenv("BERTLIB_DATA", str(places["root"] / "mine"))
    with pytest.raises(downloads.DataNotFoundError) as error:
        downloads.find("toy")
    message = str(error.value)
    for expected in ("'toy'", f"BERTLIB_DATA: {places['root'] / 'mine' / 'glue' / 'TOY'}",
                     f"user cache: {places['cache'] / 'glue' / 'TOY'}",
                     f"{closed}/glue/data/TOY.zip", "`bertlib download toy`", "BERTLIB_DATA_MIRROR"):
        assert expected in message
    assert isinstance(error.value, FileNotFoundError)  # the CLI's `except FileNotFoundError` reports it


def test_without_download_nothing_is_fetched(places, host):
    with pytest.raises(downloads.DataNotFoundError, match="downloads are off"):
        downloads.find("toy", download=False)
    assert host.requests == []


def test_mirror_replaces_scheme_and_host_and_keeps_the_path(monkeypatch):
    monkeypatch.setenv("BERTLIB_DATA_MIRROR", "http://mirror.example.cn:8080/bertlib/")
    assert downloads.source_url("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip") == \
        "http://mirror.example.cn:8080/bertlib/glue/data/SST-2.zip"
    monkeypatch.setenv("BERTLIB_DATA_MIRROR", "mirror.example.cn")
    with pytest.raises(ValueError, match="not a base URL"):
        downloads.source_url("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip")
    monkeypatch.delenv("BERTLIB_DATA_MIRROR")
    assert downloads.source_url("https://x.org/a?b=1") == "https://x.org/a?b=1"


def test_unknown_names_and_groups(places):
    assert downloads.expand(["toys", "toy", "sst2"]) == ["toy", "sst2"]
    assert downloads.expand(["glue"])[:2] == ["cola", "sst2"]
    with pytest.raises(ValueError, match="Unknown dataset 'sst5'.*'sst2'"):
        downloads.expand(["sst5"])


def test_cli_download_then_list(places, host, capsys):
    assert cli.main(["download", "toys"]) == 0
    assert str(places["cache"] / "glue" / "TOY") in capsys.readouterr().out
    host.stop()
    assert cli.main(["download", "toy"]) == 0  # already there: no download
    assert cli.main(["download", "--list"]) == 0
    assert re.search(r"toy\s+" + re.escape(str(places["cache"] / "glue" / "TOY")), capsys.readouterr().out)
    assert cli.main(["download", "sst5"]) == 2
    assert "Unknown dataset 'sst5'" in capsys.readouterr().err


def test_mrpc_is_split_by_glues_dev_ids(tmp_path):
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    pairs = [("1", "11", "12", "A cat sat.", "A cat was sitting."), ("0", "21", "22", "It rained.", "It was sunny."),
             ("1", "31", "32", "He left.", "He went away.")]
    (tmp_path / "msr_paraphrase_train.txt").write_text(
        header + "".join("\t".join(pair) + "\r\n" for pair in pairs), encoding="utf-8", newline="")
    (tmp_path / "dev_ids.tsv").write_text("21\t22\n", encoding="utf-8")
    downloads._build_mrpc(tmp_path)
    dev = (tmp_path / "dev.tsv").read_text(encoding="utf-8")
    train = (tmp_path / "train.tsv").read_text(encoding="utf-8")
    assert dev == header + "0\t21\t22\tIt rained.\tIt was sunny.\n"
    assert train == header + "1\t11\t12\tA cat sat.\tA cat was sitting.\n1\t31\t32\tHe left.\tHe went away.\n"


# The real registry --------------------------------------------------------------------------------------------

REAL_HOSTS = {"dl.fbaipublicfiles.com", "rajpurkar.github.io", "raw.githubusercontent.com", "wikitext.smerity.com"}


def _real_registry():
    return json.loads(downloads.REGISTRY_FILE.read_text(encoding="utf-8"))


def test_real_registry_has_real_https_urls_and_well_formed_hashes():
    registry = _real_registry()
    assert set(downloads.expand(["glue"], registry)) == {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli",
                                                        "rte", "wnli"}
    assert {"squad_v1", "squad_v2", "swag", "wikitext103"} <= set(registry["datasets"])
    paths = set()
    for name, spec in registry["datasets"].items():
        produced = set()
        for download in spec["downloads"]:
            url = urllib.parse.urlsplit(download["url"])
            assert url.scheme == "https" and url.netloc in REAL_HOSTS, download["url"]
            assert re.fullmatch(r"(/[\w.%-]+)+\.(zip|json|csv|tsv|txt)", url.path), download["url"]
            assert url.path not in paths, f"two downloads share {url.path}: a mirror could not hold both"
            paths.add(url.path)
            assert re.fullmatch(r"[0-9a-f]{64}", download["sha256"]), name
            assert isinstance(download["size"], int) and download["size"] > 0, name
            assert download["hash_source"], name
            produced |= set(download.get("members", {})) | {download.get("file")}
        if spec.get("build") == "mrpc":
            produced |= {"train.tsv", "dev.tsv"}
        assert set(spec["files"]) <= produced, name
        for file, digest in spec["files"].items():
            assert digest is None or re.fullmatch(r"[0-9a-f]{64}", digest), (name, file)


def test_real_registry_file_hashes_match_the_distributed_files_in_shared():
    shared = shared_dir()
    if shared is None or not (shared / "data").is_dir():
        pytest.skip("../shared/data is absent (set BERTLIB_SHARED): the distributed files are not here")
    registry, data = _real_registry(), shared / "data"
    checked = set()
    for name, spec in registry["datasets"].items():
        plain = {download["file"]: download["sha256"] for download in spec["downloads"] if "file" in download}
        for file, digest in spec["files"].items():
            path = data / spec["folder"] / file
            if file in plain:
                assert digest == plain[file], (name, file)  # a plain download is the file itself
            elif digest is not None:  # a member hash must come from a real copy, never be made up
                assert path.is_file(), f"{name}: {file} has a hash but no reference copy in {data}"
            if path.is_file():
                assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, (name, file)
                checked.add(path.relative_to(data).as_posix())
    every_glue_file = {path.relative_to(data).as_posix() for path in (data / "glue").rglob("*") if path.is_file()}
    assert every_glue_file <= checked


def test_mirror_tool_rebuilds_downloads_whose_files_hash_as_the_real_registry(tmp_path):
    shared = shared_dir()
    if shared is None or not (shared / "data" / "glue" / "WNLI").is_dir():
        pytest.skip("../shared/data/glue/WNLI is absent (set BERTLIB_SHARED)")
    data = tmp_path / "data"
    shutil.copytree(shared / "data" / "glue" / "WNLI", data / "glue" / "WNLI")
    registry = serve_mirror.build_mirror(data, tmp_path / "mirror")
    assert list(registry["datasets"]) == ["wnli"]
    assert registry["datasets"]["wnli"]["files"] == _real_registry()["datasets"]["wnli"]["files"]
    archive = tmp_path / "mirror" / "glue" / "data" / "WNLI.zip"
    assert registry["datasets"]["wnli"]["downloads"][0]["sha256"] == _sha256(archive.read_bytes())
    (data / "glue" / "WNLI" / "dev.tsv").write_bytes((data / "glue" / "WNLI" / "dev.tsv").read_bytes() + b"x")
    with pytest.raises(ValueError, match="not the distributed file"):
        serve_mirror.build_mirror(data, tmp_path / "mirror2")


def test_mirror_tool_serves_a_declared_stand_in_and_says_so(tmp_path):
    data, extract = tmp_path / "data", tmp_path / "dev-v2.0-small.json"
    data.mkdir()
    extract.write_text('{"version": "v2.0", "data": []}', encoding="utf-8")
    registry = serve_mirror.build_mirror(data, tmp_path / "mirror", {("squad_v2", "dev-v2.0.json"): extract})
    assert list(registry["datasets"]) == ["squad_v2"]
    entry = registry["datasets"]["squad_v2"]
    assert entry["files"] == {"dev-v2.0.json": _sha256(extract.read_bytes())}
    assert "stand-in, not the distributed file" in entry["downloads"][0]["hash_source"]
    served = tmp_path / "mirror" / "SQuAD-explorer" / "dataset" / "dev-v2.0.json"
    assert served.read_bytes() == extract.read_bytes()
    with pytest.raises(ValueError, match="no file 'dev-v9.json'"):
        serve_mirror.build_mirror(data, tmp_path / "mirror2", {("squad_v2", "dev-v9.json"): extract})


def test_loaders_and_the_finetune_command_find_data_by_name(places, monkeypatch):
    from bertlib.finetune import tasks

    mine = places["root"] / "mine"
    (mine / "glue" / "SST-2").mkdir(parents=True)
    (mine / "glue" / "SST-2" / "dev.tsv").write_text("sentence\tlabel\na fine film \t1\n", encoding="utf-8")
    (mine / "squad").mkdir()
    (mine / "squad" / "dev-v1.1.json").write_text("{}", encoding="utf-8")
    (mine / "swag").mkdir()
    (mine / "swag" / "val.csv").write_text("", encoding="utf-8")
    monkeypatch.setenv("BERTLIB_DATA", str(mine))
    dev = tasks.load_glue("sst2", None, "dev")
    assert dev.texts_a == ["a fine film "] and dev.labels.tolist() == [1]
    assert tasks.squad_file("squad_v1", None, "dev") == mine / "squad" / "dev-v1.1.json"
    assert tasks.swag_file(None, "dev") == mine / "swag" / "val.csv"
    parser = cli.build_parser("finetune")
    assert parser.parse_args(["finetune", "--task", "sst2", "--init", "tiny"]).data_dir is None
