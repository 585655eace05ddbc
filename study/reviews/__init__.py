"""Expert review of task instances (the paper's appendix D), for researchers: rate a template
version's instances on the four quality criteria, and read the reviewers' agreement."""
