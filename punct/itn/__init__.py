"""Speech-informed inverse text normalisation data: ParCzech labels, verticals, alignment, chunks, segments."""
