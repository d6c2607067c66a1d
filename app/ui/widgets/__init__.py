"""Small parts every view uses: status colours and the colour maths (WCAG contrast), the focus
ring, tooltips for foreign text, the keyboard shortcuts and their dialog,
screen-reader announcements, grids, row tables and running work off the GUI thread."""
