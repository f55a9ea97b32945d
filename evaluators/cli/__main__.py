from evaluators.cli.app import main

main()
