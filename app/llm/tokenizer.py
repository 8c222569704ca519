"""GPT-2 style byte-level BPE tokenizer built from GGUF metadata.

Stdlib only (runs under Pyodide). Mirrors the SmolLM2 tokenizer:

* pre-tokenizer "smollm": every numeric character (\\p{N}) is its own piece,
  then the GPT-2 split regex
  ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
  runs on the text between digits (HF: Sequence[Digits(individual_digits),
  ByteLevel(add_prefix_space=False)]; llama.cpp: regexes ["\\p{N}", gpt2]).
* byte-level BPE with merge ranks; byte symbols missing from the vocab are
  dropped before merging, as HF tokenizers does (it has no unk token).
* control / user-defined tokens (<|im_start|> ...) found literally in the text
  map to their ids when ``allow_special`` is true.
"""

import codecs
import re
import unicodedata

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

TOKEN_TYPE_NORMAL = 1
TOKEN_TYPE_CONTROL = 3
TOKEN_TYPE_USER_DEFINED = 4
_SPECIAL_TYPES = (TOKEN_TYPE_CONTROL, TOKEN_TYPE_USER_DEFINED)

_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")
# Oniguruma's Unicode \s: these controls plus categories Zs, Zl, Zp.
_SPACE_CONTROLS = frozenset("\t\n\x0b\x0c\r\x85")
_CACHE_LIMIT = 200_000


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character table."""
    printable = (list(range(ord("!"), ord("~") + 1))
                 + list(range(ord("\xa1"), ord("\xac") + 1))
                 + list(range(ord("\xae"), ord("\xff") + 1)))
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_BYTE_ENCODER = bytes_to_unicode()
_BYTE_DECODER = {ch: b for b, ch in _BYTE_ENCODER.items()}
_CLASS_CACHE = {}


def char_class(ch):
    """'S' whitespace, 'L' letter, 'N' number, 'P' anything else."""
    kind = _CLASS_CACHE.get(ch)
    if kind is None:
        cat = unicodedata.category(ch)
        if ch in _SPACE_CONTROLS or cat in ("Zs", "Zl", "Zp"):
            kind = "S"
        elif cat[0] in "LN":
            kind = cat[0]
        else:
            kind = "P"
        _CLASS_CACHE[ch] = kind
    return kind


def _piece_end(text, cls, i, split_digits):
    """End index of the GPT-2 regex match starting at ``i``.

    With ``split_digits`` every 'N' character is a segment of its own, so it
    is a single piece and acts as the end of the text for its neighbours.
    """
    n = len(text)
    if split_digits and cls[i] == "N":
        return i + 1
    if text[i] == "'":
        for suffix in _CONTRACTIONS:
            if text.startswith(suffix, i + 1):
                return i + 1 + len(suffix)
    start = i
    if text[i] == " " and i + 1 < n and cls[i + 1] != "S":
        if not (split_digits and cls[i + 1] == "N"):
            start = i + 1  # the optional leading space of ' ?X+'
    kind = cls[start]
    j = start + 1
    if kind != "S":  # ' ?\p{L}+' | ' ?\p{N}+' | ' ?[^\s\p{L}\p{N}]+'
        while j < n and cls[j] == kind:
            j += 1
        return j
    while j < n and cls[j] == "S":
        j += 1
    at_end = j == n or (split_digits and cls[j] == "N")
    if at_end or j - i == 1:
        return j  # '\s+(?!\S)' to the end, or the lone '\s+'
    return j - 1  # '\s+(?!\S)' leaves the last space for the next word


def pre_tokenize(text, split_digits=True):
    """Split text into pieces the way SmolLM2's pre-tokenizer does."""
    cls = [char_class(ch) for ch in text]
    pieces, i = [], 0
    while i < len(text):
        j = _piece_end(text, cls, i, split_digits)
        pieces.append(text[i:j])
        i = j
    return pieces


def _as_list(values):
    return None if values is None else [v for v in values]


class Tokenizer:
    def __init__(self, tokens, merges, token_types=None, bos_id=None,
                 eos_id=None, add_bos=False, chat_template=None):
        self.tokens = [str(t) for t in tokens]
        self.token_types = _as_list(token_types)
        self.bos_id = None if bos_id is None else int(bos_id)
        self.eos_id = None if eos_id is None else int(eos_id)
        self.add_bos = bool(add_bos)
        self.chat_template = chat_template
        self._vocab = {tok: i for i, tok in enumerate(self.tokens)}
        self._ranks = self._build_ranks(merges)
        self._special = self._find_special()
        self._special_ids = frozenset(self._special.values())
        self._special_re = self._build_special_re()
        self._token_bytes = [self._bytes_of(i) for i in range(len(self.tokens))]
        self._cache = {}

    @classmethod
    def from_metadata(cls, md):
        model = md.get("tokenizer.ggml.model", "gpt2")
        if model != "gpt2":
            raise ValueError(f"unsupported tokenizer model {model!r}")
        pre = md.get("tokenizer.ggml.pre", "smollm")
        if pre != "smollm":
            raise ValueError(f"unsupported pre-tokenizer {pre!r}")
        return cls(md["tokenizer.ggml.tokens"], md["tokenizer.ggml.merges"],
                   token_types=md.get("tokenizer.ggml.token_type"),
                   bos_id=md.get("tokenizer.ggml.bos_token_id"),
                   eos_id=md.get("tokenizer.ggml.eos_token_id"),
                   add_bos=md.get("tokenizer.ggml.add_bos_token", False),
                   chat_template=md.get("tokenizer.chat_template"))

    @property
    def vocab_size(self):
        return len(self.tokens)

    # -- construction helpers -------------------------------------------
    @staticmethod
    def _build_ranks(merges):
        ranks = {}
        for rank, merge in enumerate(merges):
            left, right = str(merge).split(" ")
            ranks.setdefault((left, right), rank)
        return ranks

    def _find_special(self):
        if self.token_types is None:
            ids = [i for i in (self.bos_id, self.eos_id) if i is not None]
        else:
            ids = [i for i, t in enumerate(self.token_types) if t in _SPECIAL_TYPES]
        return {self.tokens[i]: i for i in ids}

    def _build_special_re(self):
        if not self._special:
            return None
        texts = sorted(self._special, key=len, reverse=True)  # longest first
        return re.compile("|".join(re.escape(t) for t in texts))

    def _bytes_of(self, token_id):
        text = self.tokens[token_id]
        if token_id in self._special_ids or any(ch not in _BYTE_DECODER for ch in text):
            return text.encode("utf-8")
        return bytes(_BYTE_DECODER[ch] for ch in text)

    # -- encoding ----------------------------------------------------------
    def encode(self, text, allow_special=True, add_bos=None):
        ids = []
        if self.add_bos if add_bos is None else add_bos:
            ids.append(self.bos_id)
        for chunk, special_id in self._split_special(text, allow_special):
            if special_id is not None:
                ids.append(special_id)
            else:
                for piece in pre_tokenize(chunk):
                    ids.extend(self._bpe_piece(piece))
        return ids

    def _split_special(self, text, allow_special):
        """Yield (text, None) chunks and (token_text, id) special matches."""
        if not allow_special or self._special_re is None:
            yield text, None
            return
        pos = 0
        for m in self._special_re.finditer(text):
            if m.start() > pos:
                yield text[pos:m.start()], None
            yield m.group(), self._special[m.group()]
            pos = m.end()
        if pos < len(text):
            yield text[pos:], None

    def _bpe_piece(self, piece):
        ids = self._cache.get(piece)
        if ids is None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            symbols = "".join(_BYTE_ENCODER[b] for b in piece.encode("utf-8"))
            ids = [self._vocab[s] for s in self._bpe(symbols)]
            self._cache[piece] = ids
        return ids

    def _bpe(self, symbols):
        """Merge adjacent symbols, lowest merge rank first, until none apply."""
        parts = [ch for ch in symbols if ch in self._vocab]
        ranks = self._ranks
        while len(parts) > 1:
            best_rank, best = None, None
            for pair in zip(parts, parts[1:]):
                rank = ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank, best = rank, pair
            if best is None:
                break
            parts = self._merge_pair(parts, best)
        return parts

    @staticmethod
    def _merge_pair(parts, pair):
        left, right = pair
        merged, out, i = left + right, [], 0
        while i < len(parts):
            if i + 1 < len(parts) and parts[i] == left and parts[i + 1] == right:
                out.append(merged)
                i += 2
            else:
                out.append(parts[i])
                i += 1
        return out

    # -- decoding ----------------------------------------------------------
    def is_special(self, token_id):
        return token_id in self._special_ids

    def decode_bytes(self, ids, skip_special=False):
        table = self._token_bytes
        return b"".join(table[i] for i in ids
                        if not (skip_special and self.is_special(i)))

    def decode(self, ids, skip_special=False):
        return self.decode_bytes(ids, skip_special).decode("utf-8", errors="replace")

    def token_bytes(self, token_id):
        return self._token_bytes[token_id]

    def stream_decoder(self, skip_special=False):
        return StreamDecoder(self, skip_special)

    # -- chat ----------------------------------------------------------------
    def render_chat(self, messages, add_generation_prompt=True):
        """ChatML exactly as SmolLM2's chat_template renders it."""
        out = []
        if messages and messages[0]["role"] != "system":
            out.append(f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n")
        for msg in messages:
            out.append(f"<|im_start|>{msg['role']}\n{msg['content']}<|im_end|>\n")
        if add_generation_prompt:
            out.append("<|im_start|>assistant\n")
        return "".join(out)

    def chat_prompt(self, user_text, system=None):
        messages = [] if system is None else [{"role": "system", "content": system}]
        messages.append({"role": "user", "content": user_text})
        return self.render_chat(messages, add_generation_prompt=True)


class StreamDecoder:
    """Feed token ids one at a time; get back only complete UTF-8 text."""

    def __init__(self, tokenizer, skip_special=False):
        self._tok = tokenizer
        self._skip_special = skip_special
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, token_id):
        if self._skip_special and self._tok.is_special(token_id):
            return ""
        return self._utf8.decode(self._tok.token_bytes(token_id))

    def flush(self):
        """Return what is left (incomplete bytes become U+FFFD) and reset."""
        text = self._utf8.decode(b"", final=True)
        self._utf8.reset()
        return text
