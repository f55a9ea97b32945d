import sys

from factprobe.cli.app import main

sys.exit(main())
