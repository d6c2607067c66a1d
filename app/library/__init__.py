"""Where models come from: the folders Hearth scans, the embedded default, Hugging Face."""
