"""Ask memory a question: an answer with its sources (answer.py), extractive (extract.py) or by the
observer's model (model.py)."""
