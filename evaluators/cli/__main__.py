import sys

from evaluators.cli.app import main

sys.exit(main())
