"""Make NLTK's WordNet reader work from Debian's WordNet 3.0 files, offline.

`nltk.download` cannot work here (no internet), but Debian's `wordnet-base` and
`wordnet-sense-index` install the same WordNet 3.0 database at /usr/share/wordnet.
NLTK wants it as <nltk_data>/corpora/wordnet/ with a `lexnames` file Debian does
not ship. We COPY the files (nltk 3.10 rejects symlinks that leave its data root)
and write `lexnames` ourselves, then point NLTK_DATA at the folder.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

DEBIAN_WORDNET = Path("/usr/share/wordnet")
INSTALL_HINT = "WordNet not installed (apt-get install wordnet-base wordnet-sense-index)"
POS = ("adj", "adv", "noun", "verb")
FILES = ([f"data.{p}" for p in POS] + [f"index.{p}" for p in POS] + [f"{p}.exc" for p in POS]
         + ["cntlist.rev", "index.sense"])

# WordNet's lexicographer files in their standard numbering; the last column is the
# synset type (1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES = (
    ["adj.all\t3", "adj.pert\t3", "adv.all\t4"]
    + [f"noun.{n}\t1" for n in (
        "Tops", "act", "animal", "artifact", "attribute", "body", "cognition", "communication", "event",
        "feeling", "food", "group", "location", "motive", "object", "person", "phenomenon", "plant",
        "possession", "process", "quantity", "relation", "shape", "state", "substance", "time")]
    + [f"verb.{n}\t2" for n in (
        "body", "change", "cognition", "communication", "competition", "consumption", "contact",
        "creation", "emotion", "motion", "perception", "possession", "social", "stative", "weather")]
    + ["adj.ppl\t3"]
)
assert len(LEXNAMES) == 45


class WordNetMissing(RuntimeError):
    pass


def lexnames_text() -> str:
    return "".join(f"{i:02d}\t{line}\n" for i, line in enumerate(LEXNAMES))


def default_nltk_data(data_dir: str | os.PathLike | None = None) -> Path:
    """<data_dir>/cache/nltk_data when a data dir is known, else ~/.cache/empathy-arena/nltk_data."""
    if data_dir is not None:
        return Path(data_dir) / "cache" / "nltk_data"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "empathy-arena" / "nltk_data"


def install_wordnet(nltk_data: str | os.PathLike, source: str | os.PathLike | None = None) -> Path:
    """Copy WordNet into <nltk_data>/corpora/wordnet (idempotent). Raises WordNetMissing."""
    source = Path(source) if source is not None else DEBIAN_WORDNET
    dest = Path(nltk_data) / "corpora" / "wordnet"
    missing = [f for f in FILES if not (source / f).is_file()]
    if missing:
        if all((dest / f).is_file() for f in (*FILES, "lexnames")):
            return dest   # copied earlier; the source may have gone since
        raise WordNetMissing(f"{INSTALL_HINT}; missing in {source}: {', '.join(missing)}")
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        src, dst = source / name, dest / name
        if dst.is_symlink():
            dst.unlink()
        if not dst.exists() or dst.stat().st_size != src.stat().st_size:
            tmp = dst.with_name(dst.name + f".tmp{os.getpid()}")
            shutil.copyfile(src, tmp)   # a real copy, never a link
            tmp.replace(dst)
    lex = dest / "lexnames"
    if not lex.exists() or lex.read_text() != lexnames_text():
        lex.write_text(lexnames_text())
    return dest


def ensure_wordnet(data_dir: str | os.PathLike | None = None) -> Path:
    """Install WordNet for NLTK if needed and put its root first on NLTK's search path."""
    root = default_nltk_data(data_dir)
    install_wordnet(root)
    paths = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    if str(root) not in paths:
        os.environ["NLTK_DATA"] = os.pathsep.join([str(root), *paths])
    import nltk  # imported late: reading NLTK_DATA happens at import, so also patch the live path list
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    return root
