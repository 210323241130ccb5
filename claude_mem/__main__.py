import sys

from claude_mem.entry import main

sys.exit(main())
