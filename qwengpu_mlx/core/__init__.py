"""The bottom floor: the machine, its ISA, vocabulary, record formats and errors.

Nothing here imports anything else of the project.
"""
