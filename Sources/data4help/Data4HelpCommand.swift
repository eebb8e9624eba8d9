import ArgumentParser

/// `data4help`: the Data4Help server and its operator commands.
@main
struct Data4HelpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "data4help",
        abstract: "Data4Help: individuals share health data with the third parties they choose.",
        discussion: "Settings come from environment variables; see the README's configuration table.",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, SeedCommand.self, AuditCommand.self, BenchCommand.self, EmergencySimulatorCommand.self,
            RunDemoCommand.self,
        ],
        defaultSubcommand: ServeCommand.self
    )
}
