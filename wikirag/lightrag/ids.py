"""LightRAG's ids and entity-name normalisation, reproduced exactly: wikirag's records must land on the
keys LightRAG's own extraction and merges use.
"""

from __future__ import annotations

import re
from functools import lru_cache

from wikirag.lightrag.guard import import_lightrag

SEP = "<SEP>"  # lightrag.constants.GRAPH_FIELD_SEP: how LightRAG joins source ids and file paths

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """Text as the stores can hold it: control characters dropped (tabs and newlines kept)."""
    return _NOT_XML.sub("", text)



def md5_id(text: str, prefix: str) -> str:
    """LightRAG's id for a chunk, entity or relation text."""
    import_lightrag()
    from lightrag.utils import compute_mdhash_id

    return compute_mdhash_id(text, prefix=prefix)


# Names made only of these characters (no '&', quotes, markup, CJK or full-width forms, not all digits)
# come out of LightRAG's normaliser unchanged (property-tested): ASCII letters and digits, accented Latin
# letters (U+00C0-U+024F: "Gödel", "Čapek", "Łódź"), spaces and plain punctuation. The normaliser costs
# ~0.4 ms a call and its module's import 0.2-0.5 s, which `cost-estimate` of a vault with accented names
# would pay on every run.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9\u00c0-\u024f][A-Za-z0-9\u00c0-\u024f .,_()+:/!?-]*")


_NUMERIC = re.compile(r"[\d.]+")


@lru_cache(maxsize=1)
def normalizer_version() -> str:
    """The installed LightRAG's version: names saved as `normalize_name` made them (index.derived's unresolved
    link names) are reused only under the same one."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lightrag-hku")
    except PackageNotFoundError:
        return ""


@lru_cache(maxsize=65536)
def normalize_name(name: str) -> str:
    """LightRAG's own entity-name normalisation (extraction applies it too, so names meet)."""
    if _PLAIN_NAME.fullmatch(name) and "  " not in name and name == name.strip() and not _NUMERIC.fullmatch(name):
        return name
    import_lightrag()
    from lightrag.utils import normalize_entity_name

    return normalize_entity_name(xml_safe(name))

