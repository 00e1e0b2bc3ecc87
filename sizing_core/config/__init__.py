"""Reading a model's published files into an :class:`~sizing_core.architecture.Architecture`.

``reader`` is the entry point (``parse_config``, ``load_json``): it reads a Hugging Face ``config.json`` through the
family table (``family_table``, builders in ``families`` and ``families_classic``, class defaults in
``defaults``), the shared field readers (``fields``), recurrent and encoder-decoder layouts (``recurrent``,
``encoder_decoder``) and vision/audio towers (``towers``); ``safetensors`` reads checkpoint headers and indexes.
"""
