"""Small parts every view uses: status colours, the focus ring, tooltips for foreign text,
screen-reader announcements, grids, row tables and running work off the GUI thread."""
