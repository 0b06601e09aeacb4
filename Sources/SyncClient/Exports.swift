// The protocol's messages and state, which the client's API speaks: its users see them through SyncClient.
@_exported import ScrollModel
