import sys

from puffgm.cli import main

sys.exit(main())
