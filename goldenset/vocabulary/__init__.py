"""The vocabularies of evalsite, each defined once: plain Python, no Django import.

goldenset is the base app, so both apps read them from here:

- `stopwords`: the English function words content terms drop, and the starter set's list of common words;
- `sentences`: where a text's sentences end (the answer and judge splitter, and the simpler splitters of
  ingest, the starter set and the template question writer);
- `groundedness`: the groundedness levels of grounded answering;
- `metric_names`: the retrieval metrics and the answer metrics, in their display order;
- `golden_fields`: the fields of a golden entry as each format spells them;
- `chunks`: a long sequence in fixed-size chunks (ids per IN query, rows per insert, texts per embedding call),
  and a long text cut at a word (prompts, the starter set's expected answers).
"""
