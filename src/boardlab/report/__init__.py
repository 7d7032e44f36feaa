"""Reports: analysis of a stored campaign, then HTML (self-contained, inline SVG), Markdown and terminal."""
