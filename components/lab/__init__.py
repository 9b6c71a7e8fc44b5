"""Components of the research lab's pages (Studies, Scaling): they draw the results of
`workbench evaluate`, scaling fits and training runs. Only lab pages import them."""
