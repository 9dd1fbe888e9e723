"""Views of a run: the model both the terminal and the HTML report draw."""
