"""Field checks of a submission: pure functions, no I/O (network and files are checked elsewhere).

`validate_form(form)` returns `{field: message}`: one plain-words message per bad field, an
empty dict when every field is fine. Field names are those of `SubmissionForm`, so the UI can put
each message under its input. Network reachability (netguard.py), the upload's content
(uploads.py), duplicates, quota and the preflight (service.py) come after these checks.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

from .netguard import host_characters

LICENCES = ("apache-2.0", "mit", "bsd-3-clause", "cc-by-4.0", "cc-by-nc-4.0", "llama", "gemma", "qwen",
            "openrail", "other-open", "proprietary", "unknown")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+()-]{1,62}[A-Za-z0-9)]$")
MODEL_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
VOICE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME_MIN, NAME_MAX, MODEL_ID_MAX, VOICE_MAX = 3, 64, 200, 64
ORG_MAX, URL_MAX, KEY_MAX = 100, 2048, 512
# the limits the Submit tab shows as counters beside its boxes (one place per fact)
FIELD_LIMITS = {"name": NAME_MAX, "organisation": ORG_MAX, "model_id": MODEL_ID_MAX, "voice": VOICE_MAX}
LIVE_CALLS_MAX = 10_000          # live calls per day a submitter may allow (arena/services/live_submitted.py spends them)
RESERVED_NAMES = {"operator", "tie", "both_bad", "a", "b", "reported"}


@dataclass
class SubmissionForm:
    """What the Submit tab and `python -m eval_backend submit` collect.

    kind: "endpoint" (an OpenAI-compatible chat-completions endpoint is queried) or
    "predictions" (a zip of a predictions JSONL + wav files, see uploads.py).
    """
    name: str = ""                  # display name; also the model's key in the store
    organisation: str = ""
    link: str = ""                  # model card / paper / repo (optional)
    licence: str = "unknown"
    open_weights: bool = False
    kind: str = "endpoint"
    base_url: str = ""              # e.g. https://api.example.com/v1 (".../chat/completions" is appended)
    model_id: str = ""              # the `model` field sent to the endpoint
    audio_output: bool = False      # ask for spoken replies (modalities text+audio)
    voice: str = ""
    api_key: str = ""               # optional; never stored in clear, never echoed back
    predictions_path: str = ""      # the uploaded zip (a local path)
    live: bool = False              # opt in to live battles (answer voters' own recordings), off by default
    live_calls_per_day: int = 0     # the submitter's budget of live calls per 24 hours (required with `live`)

    def public(self) -> dict:
        """The form without the API key (for logs and listings)."""
        d = dict(self.__dict__)
        d["api_key"] = "***" if self.api_key else ""
        return d


def _controls(text: str) -> bool:
    return any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text)


def check_name(name: object) -> str | None:
    if not isinstance(name, str) or not name.strip():
        return "Give the model a display name."
    n = name.strip()
    if len(n) > NAME_MAX:     # said first and with the count: the box does not cut what was typed or pasted
        return f"The name is {len(n):,} characters long; it may have at most {NAME_MAX}."
    if _controls(n):
        return "The name may not contain control or invisible characters."
    if not NAME_RE.match(n) or "  " in n:
        return ("The name must be 3 to 64 characters: letters, digits, spaces and . _ + ( ) -, "
                "starting with a letter or digit.")
    if n.lower() in RESERVED_NAMES:
        return f"The name '{n}' is reserved; choose another name."
    return None


def check_organisation(org: object) -> str | None:
    if org is None or org == "":
        return None
    if not isinstance(org, str):
        return "The organisation must be text."
    if len(org) > ORG_MAX:
        return f"The organisation is {len(org):,} characters long; it may have at most {ORG_MAX}."
    if _controls(org) or any(c in org for c in "<>"):
        return "The organisation may not contain control characters or < >."
    return None


def url_syntax(url: object, what: str = "URL", required: bool = True) -> str | None:
    """http(s) only, a host, no credentials, no fragment, no spaces or control characters."""
    if url is None or (isinstance(url, str) and not url.strip()):
        return f"Enter the {what}." if required else None
    if not isinstance(url, str):
        return f"The {what} must be text."
    u = url.strip()
    if len(u) > URL_MAX:
        return f"The {what} is {len(u):,} characters long; it may have at most {URL_MAX:,}."
    if _controls(u) or any(c.isspace() for c in u) or "\\" in u:
        return f"The {what} may not contain spaces, backslashes or control characters."
    if not u.isascii():
        return f"The {what} must be ASCII (write international host names in punycode, xn--...)."
    try:
        parts = urlsplit(u)
        port = parts.port
    except ValueError as exc:
        return f"The {what} cannot be read: {exc}."
    if parts.scheme.lower() not in ("http", "https"):
        return f"The {what} must start with http:// or https://."
    if not parts.hostname:
        return f"The {what} has no host name."
    bad = host_characters(parts.hostname.rstrip("."))
    if bad:
        return f"The {what} cannot be used: {bad}."
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return f"The {what} may not contain a user name or password; put an API key in its own field."
    if parts.fragment or u.endswith("#"):
        return f"The {what} may not contain a #fragment."
    if port == 0:
        return f"The {what} has an invalid port."
    return None


def check_link(link: object) -> str | None:
    return url_syntax(link, "link", required=False)


def check_licence(licence: object, open_weights: object) -> dict[str, str]:
    errors = {}
    if not isinstance(licence, str) or licence.strip().lower() not in LICENCES:
        errors["licence"] = f"Choose a licence from the list ({', '.join(LICENCES)})."
    if not isinstance(open_weights, bool):
        errors["open_weights"] = "Say whether the weights are open (yes or no)."
    elif open_weights and isinstance(licence, str) and licence.strip().lower() == "proprietary":
        errors["open_weights"] = "Open weights cannot have a proprietary licence."
    return errors


def check_endpoint(form: SubmissionForm) -> dict[str, str]:
    errors: dict[str, str] = {}
    err = url_syntax(form.base_url, "endpoint base URL")
    if err is None and isinstance(form.base_url, str):
        path = urlsplit(form.base_url.strip()).path.rstrip("/")
        if path.endswith("/chat/completions"):
            err = "Give the base URL (ending before /chat/completions, usually .../v1); the path is added for you."
        elif urlsplit(form.base_url.strip()).query:
            err = "The endpoint base URL may not have a ?query."
    if err:
        errors["base_url"] = err
    if not isinstance(form.model_id, str) or not form.model_id.strip():
        errors["model_id"] = "Enter the model id the endpoint expects (the model field of its requests)."
    elif len(form.model_id.strip()) > MODEL_ID_MAX:
        errors["model_id"] = (f"The model id is {len(form.model_id.strip()):,} characters long; it may have at most "
                              f"{MODEL_ID_MAX}.")
    elif not MODEL_ID_RE.match(form.model_id.strip()):
        errors["model_id"] = ("The model id may have up to 200 characters: letters, digits and . _ : / @ + -, "
                              "starting with a letter or digit.")
    if not isinstance(form.audio_output, bool):
        errors["audio_output"] = "Say whether the model answers with audio (yes or no)."
    if form.voice not in (None, "") and (not isinstance(form.voice, str) or not VOICE_RE.match(form.voice.strip())):
        errors["voice"] = "The voice is a short name: letters, digits and . _ - (at most 64)."
    key = form.api_key
    if key not in (None, ""):
        if not isinstance(key, str) or len(key) > KEY_MAX or _controls(key) or any(c.isspace() for c in key) \
                or not key.isascii():
            # never echo the key itself
            errors["api_key"] = f"The API key must be one line of at most {KEY_MAX} printable ASCII characters."
    return errors


def check_live(form: SubmissionForm) -> dict[str, str]:
    """Live battles (issue 22): only an endpoint that speaks can answer a voter live, within a daily budget."""
    if not isinstance(form.live, bool):
        return {"live": "Say whether the model may battle live (yes or no)."}
    if not form.live:
        return {}
    if form.kind != "endpoint" or form.audio_output is not True:
        return {"live": "Only an endpoint that answers with audio can battle live: tick 'Answers with audio'."}
    n = form.live_calls_per_day
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= LIVE_CALLS_MAX:
        return {"live_calls_per_day": f"Give the live calls per day your endpoint may receive: a whole number from "
                                      f"1 to {LIVE_CALLS_MAX:,}."}
    return {}


def check_predictions_field(form: SubmissionForm) -> dict[str, str]:
    p = form.predictions_path
    if not isinstance(p, str) or not p.strip():
        return {"predictions": "Upload a zip with your predictions JSONL and its wav files."}
    if not p.strip().lower().endswith(".zip"):
        return {"predictions": "The predictions upload must be a .zip file."}
    return {}


def validate_form(form: SubmissionForm) -> dict[str, str]:
    """Every field's error in plain words; {} when the form is fine. Pure: no network, no files."""
    errors: dict[str, str] = {}
    for fld, msg in (("name", check_name(form.name)), ("organisation", check_organisation(form.organisation)),
                     ("link", check_link(form.link))):
        if msg:
            errors[fld] = msg
    errors.update(check_licence(form.licence, form.open_weights))
    if form.kind == "endpoint":
        errors.update(check_endpoint(form))
        if isinstance(form.predictions_path, str) and form.predictions_path.strip():
            errors["predictions"] = "Give either an endpoint or a predictions upload, not both."
    elif form.kind == "predictions":
        errors.update(check_predictions_field(form))
        if isinstance(form.base_url, str) and form.base_url.strip():
            errors["base_url"] = "Give either an endpoint or a predictions upload, not both."
    else:
        errors["kind"] = "Choose an endpoint or a predictions upload."
    errors.update(check_live(form))
    return errors


def normalise_base_url(url: str) -> str:
    """The base URL as the duplicate check compares it: lower-case scheme and host, default port
    dropped, trailing slashes and dots removed."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    host = f"[{host}]" if ":" in host else host
    port = parts.port
    netloc = host if port in (None, 80 if scheme == "http" else 443) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"
