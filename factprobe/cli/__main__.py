from factprobe.cli.app import console

console()
