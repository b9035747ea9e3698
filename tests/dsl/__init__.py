"""DSL test corpus: Helion-style programs compared with PyTorch references."""
