// The document model the terminal renders: its users see it through TerminalUI.
@_exported import Documents
