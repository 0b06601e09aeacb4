import ScrollModel

/// A presenter's `document` message sharing Markdown `text` as `name`: what `present` sends
/// (`ClientMessage.encoded`), so that tests share documents as the client does.
func documentMessage(_ text: String, name: String) -> String {
    String(decoding: ClientMessage.document(name: name, format: .markdown, text: text).encoded, as: UTF8.self)
}
