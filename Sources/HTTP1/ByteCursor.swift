/// Writes pieces one after another into memory measured for them beforehand (an HTTP head
/// in one array, without a capacity check per piece).
package struct ByteCursor {
    package let memory: UnsafeMutableRawBufferPointer
    /// Bytes written so far.
    package private(set) var count = 0

    package init(_ memory: UnsafeMutableBufferPointer<UInt8>) { self.memory = UnsafeMutableRawBufferPointer(memory) }

    /// What is left to write into (for a writer that reports how much it wrote: `advance`).
    package var rest: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: memory[count...]) }

    package mutating func advance(_ written: Int) { count += written }

    package mutating func put(_ bytes: UnsafeRawBufferPointer) {
        rest.copyMemory(from: bytes)
        count += bytes.count
    }

    package mutating func put(_ text: StaticString) { put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)) }

    package mutating func put(_ text: String) {
        var text = text
        text.withUTF8 { put(UnsafeRawBufferPointer($0)) }
    }
}
