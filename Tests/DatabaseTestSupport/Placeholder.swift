package let placeholderTS = 0
