"""The object cache of a build (build/impl_cache): a student file's object,
kept by its text, the compile flags and the public headers, so that the
stubs and the files a handin leaves unchanged are compiled once. Several
graders may share it: each write is whole (a rename), and a file another
one pruned already is no error.
"""
import os
import threading

# The object cache (build/impl_cache): an object is kept only up to this
# size (honest ones are under 1 MB), and the cache in all up to CACHE_BYTES,
# the oldest used entries going first.
CACHED_OBJECT_BYTES = 8 << 20
CACHE_BYTES = 256 << 20


def from_cache(cached: str, obj: str) -> bool:
    """Copies the cached object `cached` to `obj`; False if it is not there."""
    try:
        with open(cached, "rb") as f:
            data = f.read()
    except OSError:
        return False  # not there, or pruned while we looked
    try:
        os.utime(cached)  # used: the last to be pruned
    except OSError:
        pass
    with open(obj, "wb") as f:
        f.write(data)
    return True


def to_cache(cache_dir: str, cached: str, data: bytes) -> None:
    """Keeps `data` as the object `cached`, then prunes the cache."""
    if len(data) > CACHED_OBJECT_BYTES:
        return  # no honest object is this large: it is compiled again when it comes again
    os.makedirs(cache_dir, exist_ok=True)
    tmp = cached + f".{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, cached)
    prune_cache(cache_dir)


def prune_cache(cache_dir: str, limit: int = CACHE_BYTES) -> int:
    """Removes the least recently used objects of the cache until it holds
    at most three quarters of `limit` bytes, once it holds more than `limit`;
    returns the bytes removed. Another grader may prune at the same time:
    a file gone already is no error."""
    entries = []
    for entry in os.scandir(cache_dir):
        if entry.name.endswith(".o"):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return 0
    removed = 0
    for _, size, path in sorted(entries):
        if total - removed <= limit * 3 // 4:
            break
        try:
            os.unlink(path)
            removed += size
        except OSError:
            continue
    return removed
