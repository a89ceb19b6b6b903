from team.cli.app import main

main()
