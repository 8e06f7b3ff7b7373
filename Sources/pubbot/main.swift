import BotCLI
#if canImport(Glibc)
    import Glibc
#endif

exit(BotCLI.main(CommandLine.arguments))
