"""The WRAP paper's rephrasing prompts (Maini et al., ACL 2024), verbatim: a fidelity parameter
of the method (tests pin them to ../shared/specs/wrap.md). With a chat API the style prompt and
the chunk together are the user message."""

PROMPTS: dict[str, str] = {
    "easy": "For the following paragraph give me a paraphrase of the same using a very small vocabulary and "
            "extremely simple sentences that a toddler will understand:",
    "medium": "For the following paragraph give me a diverse paraphrase of the same in high quality English "
              "language as in sentences on Wikipedia:",
    "hard": "For the following paragraph give me a paraphrase of the same using very terse and abstruse language "
            "that only an erudite scholar will understand. Replace simple words and phrases with rare and complex "
            "ones:",
    "qa": "Convert the following paragraph into a conversational format with multiple tags of \"Question:\" "
          "followed by \"Answer:\":",
}

# How the user message is built from the style's prompt and the row's text.
TEMPLATE = "{prompt}\n\n{text}"
