"""The language codes language_id's backends can give, so a recipe naming another one is refused
when it is loaded, before any model is: a row's language is always one of its model's labels, so
`languages: [english]` would send every row to the trace.

Static lists, kept equal to the models' labels by tests (py3langid's by loading its model;
fastText's lid.176 from its published label list): looking them up would load the model.
"""

from __future__ import annotations

import difflib
import re

# py3langid 0.4's shipped model (`LanguageIdentifier.nb_classes`), ISO 639-1 where there is one,
# else 639-3; `zxx` is "no linguistic content".
LANGID = frozenset("""
ace af am an ar ary arz as az ba bcl be bg bn br bs ca crh cs cy da de dz el en eo es et eu ext fa fi
fo fr fuv fy ga gcf gcr gd gl gom grc gu gug guw ha hbo he hi hr ht hu hy id ig is it ja jv ka kab
kik kk km kn ko ku ky la lb lg lij ln lo lt ltg lv mg mk ml mn mr ms mt my ne nl nn no nso oc om or pa
pcm pl ps pt qu ro ru rw sa sdh se si sk sl sn so sq sr st sv sw ta te tg th tk tl tr tt ug uk ur uz
uzs vec vi vo wa wuu xh yo yue zh zu zxx
""".split())

# fastText's lid.176 (.bin and .ftz): the 176 labels it predicts, `__label__` left out.
LID176 = frozenset("""
af als am an ar arz as ast av az azb ba bar bcl be bg bh bn bo bpy br bs bxr ca cbk ce ceb ckb co cs
cv cy da de diq dsb dty dv el eml en eo es et eu fa fi fr frr fy ga gd gl gn gom gu gv he hi hif hr
hsb ht hu hy ia id ie ilo io is it ja jbo jv ka kk km kn ko krc ku kv kw ky la lb lez li lmo lo lrc
lt lv mai mg mhr min mk ml mn mr mrj ms mt mwl my myv mzn nah nap nds ne new nl nn no oc or os pa pam
pfl pl pms pnb ps pt qu rm ro ru rue sa sah sc scn sco sd sh si sk sl so sq sr su sv sw ta te tg th
tk tl tr tt tyv ug uk ur uz vec vep vi vls vo wa war wuu xal xmf yi yo yue zh
""".split())

# Other fastText language-ID models (GlotLID, NLLB's lid218) label ISO 639-3 and the script: eng_Latn.
CODE_AND_SCRIPT = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")

# English names of the codes above, for suggestions (`english` -> en).
NAMES = {
    "ace": "Achinese", "af": "Afrikaans", "als": "Alemannic", "am": "Amharic", "an": "Aragonese",
    "ar": "Arabic", "ary": "Moroccan Arabic", "arz": "Egyptian Arabic", "as": "Assamese", "ast": "Asturian",
    "av": "Avaric", "az": "Azerbaijani", "azb": "South Azerbaijani", "ba": "Bashkir", "bar": "Bavarian",
    "bcl": "Central Bikol", "be": "Belarusian", "bg": "Bulgarian", "bh": "Bihari", "bn": "Bengali",
    "bo": "Tibetan", "bpy": "Bishnupriya", "br": "Breton", "bs": "Bosnian", "bxr": "Buryat", "ca": "Catalan",
    "cbk": "Chavacano", "ce": "Chechen", "ceb": "Cebuano", "ckb": "Central Kurdish", "co": "Corsican",
    "crh": "Crimean Tatar", "cs": "Czech", "cv": "Chuvash", "cy": "Welsh", "da": "Danish", "de": "German",
    "diq": "Zazaki", "dsb": "Lower Sorbian", "dty": "Dotyali", "dv": "Divehi", "dz": "Dzongkha", "el": "Greek",
    "eml": "Emilian-Romagnol", "en": "English", "eo": "Esperanto", "es": "Spanish", "et": "Estonian",
    "eu": "Basque", "ext": "Extremaduran", "fa": "Persian", "fi": "Finnish", "fo": "Faroese", "fr": "French",
    "frr": "Northern Frisian", "fuv": "Nigerian Fulfulde", "fy": "Western Frisian", "ga": "Irish",
    "gcf": "Guadeloupean Creole", "gcr": "Guianese Creole", "gd": "Scottish Gaelic", "gl": "Galician",
    "gn": "Guarani", "gom": "Goan Konkani", "grc": "Ancient Greek", "gu": "Gujarati",
    "gug": "Paraguayan Guarani", "guw": "Gun", "gv": "Manx", "ha": "Hausa", "hbo": "Ancient Hebrew",
    "he": "Hebrew", "hi": "Hindi", "hif": "Fiji Hindi", "hr": "Croatian", "hsb": "Upper Sorbian",
    "ht": "Haitian Creole", "hu": "Hungarian", "hy": "Armenian", "ia": "Interlingua", "id": "Indonesian",
    "ie": "Interlingue", "ig": "Igbo", "ilo": "Ilocano", "io": "Ido", "is": "Icelandic", "it": "Italian",
    "ja": "Japanese", "jbo": "Lojban", "jv": "Javanese", "ka": "Georgian", "kab": "Kabyle", "kik": "Kikuyu",
    "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "krc": "Karachay-Balkar", "ku": "Kurdish",
    "kv": "Komi", "kw": "Cornish", "ky": "Kyrgyz", "la": "Latin", "lb": "Luxembourgish", "lez": "Lezghian",
    "lg": "Ganda", "li": "Limburgish", "lij": "Ligurian", "lmo": "Lombard", "ln": "Lingala", "lo": "Lao",
    "lrc": "Northern Luri", "lt": "Lithuanian", "ltg": "Latgalian", "lv": "Latvian", "mai": "Maithili",
    "mg": "Malagasy", "mhr": "Eastern Mari", "min": "Minangkabau", "mk": "Macedonian", "ml": "Malayalam",
    "mn": "Mongolian", "mr": "Marathi", "mrj": "Western Mari", "ms": "Malay", "mt": "Maltese",
    "mwl": "Mirandese", "my": "Burmese", "myv": "Erzya", "mzn": "Mazanderani", "nah": "Nahuatl",
    "nap": "Neapolitan", "nds": "Low German", "ne": "Nepali", "new": "Newari", "nl": "Dutch",
    "nn": "Norwegian Nynorsk", "no": "Norwegian", "nso": "Northern Sotho", "oc": "Occitan", "om": "Oromo",
    "or": "Odia", "os": "Ossetian", "pa": "Punjabi", "pam": "Pampanga", "pcm": "Nigerian Pidgin",
    "pfl": "Palatine German", "pl": "Polish", "pms": "Piedmontese", "pnb": "Western Punjabi", "ps": "Pashto",
    "pt": "Portuguese", "qu": "Quechua", "rm": "Romansh", "ro": "Romanian", "ru": "Russian", "rue": "Rusyn",
    "rw": "Kinyarwanda", "sa": "Sanskrit", "sah": "Yakut", "sc": "Sardinian", "scn": "Sicilian", "sco": "Scots",
    "sd": "Sindhi", "sdh": "Southern Kurdish", "se": "Northern Sami", "sh": "Serbo-Croatian", "si": "Sinhala",
    "sk": "Slovak", "sl": "Slovenian", "sn": "Shona", "so": "Somali", "sq": "Albanian", "sr": "Serbian",
    "st": "Southern Sotho", "su": "Sundanese", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu",
    "tg": "Tajik", "th": "Thai", "tk": "Turkmen", "tl": "Tagalog", "tr": "Turkish", "tt": "Tatar",
    "tyv": "Tuvinian", "ug": "Uyghur", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek", "uzs": "Southern Uzbek",
    "vec": "Venetian", "vep": "Veps", "vi": "Vietnamese", "vls": "West Flemish", "vo": "Volapük",
    "wa": "Walloon", "war": "Waray", "wuu": "Wu Chinese", "xal": "Kalmyk", "xh": "Xhosa", "xmf": "Mingrelian",
    "yi": "Yiddish", "yo": "Yoruba", "yue": "Cantonese", "zh": "Chinese", "zu": "Zulu",
    "zxx": "no linguistic content",
}
# Other names people write for them: other English names, and a few languages' own names.
ALIASES = {"farsi": "fa", "filipino": "tl", "bangla": "bn", "oriya": "or", "panjabi": "pa", "castilian": "es",
           "flemish": "nl", "moldovan": "ro", "sinhalese": "si", "gaelic": "gd", "mandarin": "zh", "yue chinese": "yue",
           "deutsch": "de", "français": "fr", "francais": "fr", "español": "es", "espanol": "es", "italiano": "it",
           "português": "pt", "portugues": "pt", "nederlands": "nl", "polski": "pl", "svenska": "sv", "dansk": "da",
           "norsk": "no", "suomi": "fi", "türkçe": "tr", "turkce": "tr", "čeština": "cs", "cestina": "cs",
           "magyar": "hu", "română": "ro", "romana": "ro", "русский": "ru", "українська": "uk", "中文": "zh",
           "日本語": "ja", "한국어": "ko", "العربية": "ar", "हिन्दी": "hi"}

# ISO 639-2 and 639-3 codes (bibliographic ones too: ger, fre) of the languages with a two-letter code.
THREE_LETTER = {
    "afr": "af", "amh": "am", "arg": "an", "ara": "ar", "asm": "as", "ava": "av", "aze": "az", "bak": "ba",
    "bel": "be", "bul": "bg", "bih": "bh", "ben": "bn", "bod": "bo", "tib": "bo", "bre": "br", "bos": "bs",
    "cat": "ca", "che": "ce", "cos": "co", "ces": "cs", "cze": "cs", "chv": "cv", "cym": "cy", "wel": "cy",
    "dan": "da", "deu": "de", "ger": "de", "div": "dv", "dzo": "dz", "ell": "el", "gre": "el", "eng": "en",
    "epo": "eo", "spa": "es", "est": "et", "eus": "eu", "baq": "eu", "fas": "fa", "per": "fa", "fin": "fi",
    "fao": "fo", "fra": "fr", "fre": "fr", "fry": "fy", "gle": "ga", "gla": "gd", "glg": "gl", "grn": "gn",
    "guj": "gu", "glv": "gv", "hau": "ha", "heb": "he", "hin": "hi", "hrv": "hr", "hat": "ht", "hun": "hu",
    "hye": "hy", "arm": "hy", "ina": "ia", "ind": "id", "ile": "ie", "ibo": "ig", "ido": "io", "isl": "is",
    "ice": "is", "ita": "it", "jpn": "ja", "jav": "jv", "kat": "ka", "geo": "ka", "kaz": "kk", "khm": "km",
    "kan": "kn", "kor": "ko", "kur": "ku", "kom": "kv", "cor": "kw", "kir": "ky", "lat": "la", "ltz": "lb",
    "lug": "lg", "lim": "li", "lin": "ln", "lao": "lo", "lit": "lt", "lav": "lv", "mlg": "mg", "mkd": "mk",
    "mac": "mk", "mal": "ml", "mon": "mn", "mar": "mr", "msa": "ms", "may": "ms", "mlt": "mt", "mya": "my",
    "bur": "my", "nep": "ne", "nld": "nl", "dut": "nl", "nno": "nn", "nor": "no", "oci": "oc", "orm": "om",
    "ori": "or", "oss": "os", "pan": "pa", "pol": "pl", "pus": "ps", "por": "pt", "que": "qu", "roh": "rm",
    "ron": "ro", "rum": "ro", "rus": "ru", "kin": "rw", "san": "sa", "srd": "sc", "snd": "sd", "sme": "se",
    "hbs": "sh", "sin": "si", "slk": "sk", "slo": "sk", "slv": "sl", "sna": "sn", "som": "so", "sqi": "sq",
    "alb": "sq", "srp": "sr", "sot": "st", "sun": "su", "swe": "sv", "swa": "sw", "tam": "ta", "tel": "te",
    "tgk": "tg", "tha": "th", "tuk": "tk", "tgl": "tl", "tur": "tr", "tat": "tt", "uig": "ug", "ukr": "uk",
    "urd": "ur", "uzb": "uz", "vie": "vi", "vol": "vo", "wln": "wa", "xho": "xh", "yid": "yi", "yor": "yo",
    "zho": "zh", "chi": "zh", "zul": "zu",
}


def known_codes(backend: str) -> frozenset[str]:
    return LANGID if backend == "langid" else LID176


def unknown_code_message(code: str, backend: str) -> str | None:
    """None when `backend`'s model can give `code`; else why not, with the code it may mean."""
    known = known_codes(backend)
    if code in known or (backend == "fasttext" and CODE_AND_SCRIPT.fullmatch(code)):
        return None
    model = "py3langid" if backend == "langid" else "fastText's lid.176"
    message = f"unknown language code {code!r}: not among the ISO 639 codes {model} gives"
    guess = _guess(code, known)
    if guess:
        return message + f"; did you mean {guess} ({NAMES[guess]})?"
    listed = ", ".join(sorted(known))
    if backend == "fasttext":
        listed += " (or a model's own ISO 639-3 and script codes, such as eng_Latn)"
    return message + f". Codes: {listed}"


def _guess(code: str, known: frozenset[str]) -> str | None:
    """The code `code` most likely means: itself in lower case, a language's name (`English`,
    `farsi`, `Deutsch`), its three-letter code (`eng`), or a close misspelling of a name (`englsh`)."""
    text = code.strip().lower()
    by_name = {name.lower(): c for c, name in NAMES.items() if c != "zxx"} | ALIASES
    guess = text if text in known else by_name.get(text) or THREE_LETTER.get(text)
    if guess is None:
        close = difflib.get_close_matches(text, list(by_name), n=1, cutoff=0.85)
        guess = by_name[close[0]] if close else None
    return guess if guess in known else None
