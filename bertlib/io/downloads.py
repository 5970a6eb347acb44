"""The course's datasets by name: found on this machine, or downloaded once, checked and cached.

`find("sst2")` returns the folder that holds a dataset's files, looking in this order:

1. `$BERTLIB_DATA`: folders you name, laid out as below, searched in order (several are separated by `os.pathsep`,
   `:` on Linux, as in PATH; a lab's read-only shared copy goes last; CI puts its `../shared/data` there);
   `bertlib finetune --data-dir` names one directly;
2. the user cache, `$BERTLIB_CACHE` or the platform's cache folder (`~/.cache/bertlib` on Linux);
3. a download from the dataset's canonical URL into the cache.

Layout, the same in every place: `glue/SST-2/train.tsv`, `squad/dev-v1.1.json`, `swag/val.csv`,
`wikitext-103-raw/wiki.train.raw`. A folder you lay out yourself may hold only the files you use (CI's copy has
QNLI's dev set and no train set); in the cache, a dataset counts only when all its files are there.

Downloads go through `pooch` (streamed to a temporary file, checked against the sha256 in `registry.json`,
moved into place only when complete, retried, with a progress bar). Archives are unpacked into a staging folder
inside the cache, every file the course reads is checked against its own sha256, and only then moved into
place: an interrupted or corrupted download is never used. `$BERTLIB_DATA_MIRROR=<base URL>` replaces the scheme
and host of every URL, keeping its path, for learners who cannot reach the canonical hosts.
`$BERTLIB_DATA_REGISTRY=<file>` adds or replaces registry entries (a mirror of rebuilt archives needs one).

Downloads stay in the cache: every folder and file name of a registry is a plain relative name (no `..`, nothing
absolute), and a destination that resolves outside the cache (a link pointing out) is refused before anything is
written. A host that does not connect within `CONNECT_TIMEOUT_S`, sends nothing for `READ_TIMEOUT_S`, or sends
fewer than `MIN_BYTES_PER_S` bytes a second over `SLOW_WINDOW_S` is given up with a `DownloadTimeout` naming the
URL and the limit.

`bertlib download NAME...` (this module's command) fetches ahead of time.
"""

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
import zipfile
from pathlib import Path

from bertlib._lazy import MissingExtraError, import_extra
from bertlib.io.files import cache_home

REGISTRY_FILE = Path(__file__).with_name("registry.json")
DOWNLOAD_RETRIES = 2  # pooch tries again after a dropped connection or a bad hash (not after a timeout)
CONNECT_TIMEOUT_S = 30  # to open the connection to the host
READ_TIMEOUT_S = 60  # with the connection open, seconds without a single byte
SLOW_WINDOW_S = 60  # a transfer that brings fewer than MIN_BYTES_PER_S * SLOW_WINDOW_S bytes in any such
MIN_BYTES_PER_S = 1024  # window is stopped (curl's --speed-limit / --speed-time): a byte every 3 s never ends
CHUNK_BYTES = 1 << 16
STALE_STAGING_S = 24 * 3600  # a staging folder this old was left by a killed download
# A folder or file name of the registry: letters, digits, '.', '_', '-', not starting with a dot ('..', '.partial').
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


class DataNotFoundError(FileNotFoundError):
    """A dataset is on no place of the lookup order and could not be downloaded."""


class DataIntegrityError(ValueError):
    """A downloaded or unpacked file does not hash to the registry's sha256."""


class DownloadTimeout(TimeoutError):
    """A host that did not connect, stalled, or sent too slowly; the message names the URL and the limit."""


# The registry ----------------------------------------------------------------------------------------------------

def load_registry():
    """The shipped `registry.json`, with the datasets of `$BERTLIB_DATA_REGISTRY` added or replaced."""
    registry = json.loads(REGISTRY_FILE.read_text(encoding="utf-8"))
    override = os.environ.get("BERTLIB_DATA_REGISTRY")
    if override:
        path = Path(override)
        try:
            extra = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"BERTLIB_DATA_REGISTRY={override}: cannot read it as a JSON registry ({error}).") \
                from error
        if not isinstance(extra.get("datasets"), dict):
            raise ValueError(f"BERTLIB_DATA_REGISTRY={override} has no \"datasets\" object; expected the layout "
                             f"of {REGISTRY_FILE}.")
        registry["datasets"].update(extra["datasets"])
        registry["groups"].update(extra.get("groups", {}))
    for name, spec in registry["datasets"].items():
        where = f"BERTLIB_DATA_REGISTRY={override}" if override and name in extra["datasets"] else str(REGISTRY_FILE)
        _check_entry(name, spec, where)
    return registry


def _check_entry(name, spec, where):
    """Refuse an entry that would write outside its own folder of the cache: every name is a plain relative one."""
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: dataset {name!r} is not an object.")
    missing = [key for key in ("folder", "downloads", "files") if key not in spec]
    if missing:
        raise ValueError(f"{where}: dataset {name!r} lacks {missing}; every dataset needs folder, downloads, files.")

    def check(value, what, parts=False):
        pieces = value.split("/") if parts and isinstance(value, str) else [value]
        if not all(isinstance(piece, str) and _NAME.fullmatch(piece) for piece in pieces):
            raise ValueError(f"{where}: dataset {name!r} has {what} {value!r}; expected a plain relative "
                             f"{'path' if parts else 'file name'} inside the cache (letters, digits, '.', '_', '-'; "
                             "no '..', no absolute path, no leading dot). It was not used.")

    check(spec["folder"], "folder", parts=True)
    if not isinstance(spec["files"], dict) or not isinstance(spec["downloads"], list):
        raise ValueError(f"{where}: dataset {name!r} needs \"files\" as an object and \"downloads\" as a list.")
    for file in spec["files"]:
        check(file, "file")
    for download in spec["downloads"]:
        if not isinstance(download, dict) or not isinstance(download.get("url"), str):
            raise ValueError(f"{where}: dataset {name!r} has a download without a \"url\".")
        check(_url_file_name(download["url"]), "a download URL ending in")
        if "file" in download:
            check(download["file"], "download file")
        for file in download.get("members", {}):
            check(file, "archive member target")


def names(registry=None):
    """Every dataset name, in registry order."""
    return list((registry or load_registry())["datasets"])


def expand(requested, registry=None):
    """Dataset names for `requested` names or groups ("glue", "squad"), duplicates dropped, order kept."""
    registry = registry or load_registry()
    result = []
    for name in requested:
        members = registry["groups"].get(name, [name])
        for member in members:
            if member not in registry["datasets"]:
                raise ValueError(f"Unknown dataset {member!r}; expected one of {names(registry)} or a group "
                                 f"{list(registry['groups'])}.")
            if member not in result:
                result.append(member)
    return result


def spec_of(name, registry=None):
    """The registry entry of one dataset (ValueError naming the known ones when unknown)."""
    return (registry or load_registry())["datasets"][expand([name], registry)[0]]


def name_of_folder(folder, registry=None):
    """The dataset whose folder is `folder` (e.g. "glue/SST-2")."""
    registry = registry or load_registry()
    for name, spec in registry["datasets"].items():
        if spec["folder"] == folder:
            return name
    known = [spec["folder"] for spec in registry["datasets"].values()]
    raise ValueError(f"No dataset lives in {folder!r}; the registry knows {known}.")


# Where to look -------------------------------------------------------------------------------------------------

def places():
    """`(label, root)` pairs in lookup order: each folder of BERTLIB_DATA (one pair with root None when it is not
    set), then the user cache."""
    named = [Path(folder) for folder in os.environ.get("BERTLIB_DATA", "").split(os.pathsep) if folder.strip()]
    return [("BERTLIB_DATA", folder) for folder in named or [None]] + [("user cache", cache_home())]


def _candidates(label, root, folder):
    if label == "BERTLIB_DATA" and Path(folder).name != folder:  # also the GLUE script's own `glue_data/SST-2`
        return [root / folder, root / Path(folder).name]
    return [root / folder]


def locate(name, registry=None):
    """The folder of dataset `name` on this machine, or None. No download."""
    return _search(name, registry)[0]


def _search(name, registry):
    spec = spec_of(name, registry)
    looked = []
    for label, root in places():
        if root is None:
            looked.append(f"{label}: not set")
            continue
        is_cache = label == "user cache"
        for folder in _candidates(label, root, spec["folder"]):
            present = [file for file in spec["files"] if (folder / file).is_file()]
            if present and (not is_cache or len(present) == len(spec["files"])):
                return folder, looked
            looked.append(f"{label}: {folder}" + (f" (has only {present})" if present else " (absent)"))
    return None, looked


def find(name, download=True):
    """The folder holding dataset `name`'s files: the first place of the lookup order, else a verified download.

    Args:
        name: a dataset of the registry ("sst2", "qnli", "squad_v2", "swag", "wikitext103", ...).
        download: bool, defaults to True. False raises instead of downloading.

    Raises:
        DataNotFoundError: nowhere on this machine and (with `download`) the download failed. The message names
            the dataset, every place looked, the URL tried and the command that fetches it elsewhere.
        DataIntegrityError: a download that does not hash to the registry (never kept).
    """
    registry = load_registry()
    folder, looked = _search(name, registry)
    if folder is not None:
        return folder
    spec = spec_of(name, registry)
    urls = [source_url(download_spec["url"]) for download_spec in spec["downloads"]]
    reason = "downloads are off (download=False)"
    if download:
        try:
            return fetch(name, registry)
        except (DataIntegrityError, MissingExtraError):  # not the network's fault: said as it is
            raise
        except Exception as error:  # noqa: BLE001 - offline, refused, 404, DNS: requests' errors vary
            reason = f"the download failed: {type(error).__name__}: {error}"
    cache_folder = cache_home() / spec["folder"]
    raise DataNotFoundError(
        f"Dataset {name!r} ({spec.get('title', name)}) is not on this machine, and {reason}.\n"
        "Looked in:\n" + "".join(f"  - {place}\n" for place in looked) +
        "It would fetch:\n" + "".join(f"  - {url}\n" for url in urls) +
        f"To fix: run `bertlib download {name}` on a machine that can reach that address and copy the folder it "
        f"prints to {cache_folder} here (or point BERTLIB_DATA at a folder holding {spec['folder']}/); or set "
        "BERTLIB_DATA_MIRROR to the base URL of a mirror you can reach.")


# Downloading ---------------------------------------------------------------------------------------------------

def source_url(url):
    """`url`, with its scheme and host replaced by `$BERTLIB_DATA_MIRROR` when that is set (the path is kept)."""
    mirror = os.environ.get("BERTLIB_DATA_MIRROR", "").strip()
    if not mirror:
        return url
    if not mirror.startswith(("http://", "https://", "ftp://")):
        raise ValueError(f"BERTLIB_DATA_MIRROR={mirror!r} is not a base URL; expected e.g. "
                         "'https://mirror.example.org/bertlib'.")
    parts = urllib.parse.urlsplit(url)
    return mirror.rstrip("/") + parts.path + (f"?{parts.query}" if parts.query else "")


def fetch(name, registry=None):
    """Download dataset `name` into the cache, check every file, move them into place; returns the folder.

    Each download is streamed by pooch to a temporary file and kept only if its sha256 matches the registry's.
    Archives are unpacked in a staging folder; each file the course reads is checked against its own sha256
    (where the registry has one) before it is moved into the cache, file by file, with an atomic rename.
    """
    spec = spec_of(name, registry)
    cache = cache_home()
    cache.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(cache)
    target = _inside(cache, cache / spec["folder"])  # refused before any download when a link points out
    staging = Path(tempfile.mkdtemp(dir=cache, prefix=".partial-"))
    try:
        for download_spec in spec["downloads"]:
            path = _download(download_spec, staging / "downloads")
            if "members" in download_spec:
                _unpack(path, download_spec["members"], staging, download_spec["url"])
            else:
                os.replace(path, _inside(staging, staging / download_spec["file"]))
        if spec.get("build") == "mrpc":
            _build_mrpc(staging)
        for file, expected in spec["files"].items():
            if not (staging / file).is_file():
                raise DataIntegrityError(f"Dataset {name!r}: the downloads did not give {file}; the registry "
                                         f"expects it in {[d['url'] for d in spec['downloads']]}.")
            _check_hash(staging / file, expected, f"{name}: {file}")
        target.mkdir(parents=True, exist_ok=True)
        target = _inside(cache, target)  # a link made while we downloaded
        for file in spec["files"]:
            os.replace(staging / file, _inside(cache, target / file))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _inside(root, path):
    """`path`, resolved, when it lies inside `root` (resolved); a ValueError naming both when a link leads out."""
    resolved, root = Path(path).resolve(), Path(root).resolve()
    if resolved != root and root not in resolved.parents:
        raise ValueError(f"{path} resolves to {resolved}, outside the cache folder {root}: a link there points out "
                         "of the cache. bertlib writes downloads only inside it; remove the link.")
    return resolved


def _url_file_name(url):
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])


def _download(download_spec, folder):
    pooch = _pooch()
    url = source_url(download_spec["url"])
    file_name = _url_file_name(download_spec["url"])
    fetcher = pooch.create(path=folder, base_url="", registry={file_name: f"sha256:{download_spec['sha256']}"},
                           urls={file_name: url}, retry_if_failed=DOWNLOAD_RETRIES)
    try:
        return Path(fetcher.fetch(file_name, downloader=http_download))
    except ValueError as error:  # pooch's hash mismatch: the file was not kept
        raise DataIntegrityError(f"The download of {url} ({file_name}) does not match the registry: expected sha256 "
                                 f"{download_spec['sha256']}. The file was discarded. pooch said: {error}") from error


def http_download(url, output_file, pooch=None, check_only=False):
    """A pooch downloader: requests with connect and read timeouts and a floor on the transfer speed.

    pooch's own `HTTPDownloader` has one timeout per socket read, which a host sending a byte every few seconds
    never trips; this one also stops a transfer slower than `MIN_BYTES_PER_S` over `SLOW_WINDOW_S` (as curl's
    `--speed-limit`). It reads with `read1`, which returns whatever has arrived, so the speed is checked as bytes
    come in. A dropped connection is raised as requests' `ConnectionError`, which pooch retries; a timeout is a
    `DownloadTimeout`, which it does not (a stalled host rarely recovers within pooch's few seconds of waiting).
    """
    requests = import_extra("requests", "data", "Downloading a dataset")
    urllib3 = import_extra("urllib3", "data", "Downloading a dataset")

    try:
        response = requests.get(url, stream=True, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                                headers={"User-Agent": "bertlib (pooch)"})
    except requests.exceptions.ConnectTimeout as error:
        raise DownloadTimeout(f"{url}: no connection within {CONNECT_TIMEOUT_S} s (connect timeout). Check the "
                              "address, or set BERTLIB_DATA_MIRROR to a mirror you can reach.") from error
    except requests.exceptions.ReadTimeout as error:
        raise DownloadTimeout(f"{url}: connected, but the host sent no answer for {READ_TIMEOUT_S} s (read "
                              "timeout).") from error
    with response:
        response.raise_for_status()
        total = int(response.headers.get("Content-Length") or 0) or None
        progress = _progress_bar(total, url) if sys.stderr.isatty() or _in_notebook() else None
        received, window_start, window_received = 0, time.monotonic(), 0
        try:
            with open(output_file, "wb") as target:
                while chunk := response.raw.read1(CHUNK_BYTES, decode_content=True):
                    target.write(chunk)
                    received += len(chunk)
                    window_received += len(chunk)
                    if progress is not None:
                        progress.update(len(chunk))
                    elapsed = time.monotonic() - window_start
                    if elapsed >= SLOW_WINDOW_S:
                        if window_received < MIN_BYTES_PER_S * elapsed:
                            raise DownloadTimeout(
                                f"{url} is too slow: {window_received} bytes in the last {elapsed:.0f} s, under "
                                f"bertlib's floor of {MIN_BYTES_PER_S} bytes/s over {SLOW_WINDOW_S} s (stopped "
                                f"after {received} of {total or 'unknown'} bytes). Try again later, or set "
                                "BERTLIB_DATA_MIRROR to a faster mirror.")
                        window_start, window_received = time.monotonic(), 0
        except (urllib3.exceptions.ReadTimeoutError, requests.exceptions.ReadTimeout) as error:
            raise DownloadTimeout(f"{url} stalled: nothing for {READ_TIMEOUT_S} s (read timeout) after {received} "
                                  f"of {total or 'unknown'} bytes.") from error
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.IncompleteRead) as error:
            raise requests.exceptions.ConnectionError(f"{url}: the connection dropped after {received} of "
                                                      f"{total or 'unknown'} bytes ({error}).") from error
        finally:
            if progress is not None:
                progress.close()


def _progress_bar(total, url):
    tqdm = import_extra("tqdm.auto", "data", "A download's progress bar").tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=_url_file_name(url), leave=True)


def _unpack(archive, members, staging, url):
    try:
        with zipfile.ZipFile(archive) as zipped:
            for file, member in members.items():
                with zipped.open(member) as source, open(_inside(staging, staging / file), "wb") as target:
                    shutil.copyfileobj(source, target)
    except KeyError as error:
        raise DataIntegrityError(f"{url} has no member {error}; the registry expects {sorted(members.values())}.") \
            from error
    except zipfile.BadZipFile as error:
        raise DataIntegrityError(f"{url} is not a valid zip archive ({error}).") from error
    Path(archive).unlink()


def _build_mrpc(staging):
    """MRPC's train.tsv and dev.tsv from the MSR paraphrase file and GLUE's dev ids, as GLUE's download script
    writes them: the header line as it is, then each pair in train or dev according to its ids."""
    dev_ids = {tuple(line.strip().split("\t")) for line in (staging / "dev_ids.tsv").read_text(encoding="utf-8")
               .splitlines() if line.strip()}
    with open(staging / "msr_paraphrase_train.txt", encoding="utf-8") as source, \
            open(staging / "train.tsv", "w", encoding="utf-8") as train, \
            open(staging / "dev.tsv", "w", encoding="utf-8") as dev:
        header = source.readline()
        train.write(header)
        dev.write(header)
        for line in source:
            label, id1, id2, sentence1, sentence2 = line.strip().split("\t")
            (dev if (id1, id2) in dev_ids else train).write(f"{label}\t{id1}\t{id2}\t{sentence1}\t{sentence2}\n")


def sha256(path):
    """The sha256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_hash(path, expected, what):
    if expected is None:  # no published checksum and no reference copy: trusted through its archive's hash
        return
    actual = sha256(path)
    if actual != expected:
        raise DataIntegrityError(f"{what} does not match the registry: expected sha256 {expected}, got {actual}. "
                                 "It was not kept.")


def _remove_stale_staging(cache):
    for folder in cache.glob(".partial-*"):
        if time.time() - folder.stat().st_mtime > STALE_STAGING_S:
            shutil.rmtree(folder, ignore_errors=True)


def _in_notebook():
    return "ipykernel" in sys.modules


def _pooch():
    return import_extra("pooch", "data", "Downloading a dataset")


# Command line --------------------------------------------------------------------------------------------------

def add_arguments(parser):
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="datasets or groups to fetch into the cache (e.g. glue sst2 qnli squad_v2)")
    parser.add_argument("--list", action="store_true", help="list every dataset and where it is found")


def run(args):
    try:
        registry = load_registry()
        if args.list or not args.names:
            for name in names(registry):
                folder = locate(name, registry)
                print(f"{name:12s} {folder if folder else 'not on this machine'}")
            for group, members in registry["groups"].items():
                print(f"{group:12s} (group) {' '.join(members)}")
            return 0
        for name in expand(args.names, registry):
            folder = locate(name, registry)
            if folder is None:
                urls = [source_url(download["url"]) for download in spec_of(name, registry)["downloads"]]
                print(f"{name}: downloading {' '.join(urls)}", flush=True)
                folder = fetch(name, registry)
            print(f"{name}: {folder}", flush=True)
    except (ValueError, OSError, MissingExtraError) as error:
        print(f"bertlib download: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - a network failure, whatever requests calls it
        print(f"bertlib download: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0
