"""Image-text operators: CLIP score, image filters, DataComp's score selection."""
