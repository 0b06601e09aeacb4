/// The one comparison of secrets: presenter keys and their records, follow-key digests, the
/// admin token, token signatures and the key hasher's digests all go through `equal`, so that
/// none of them can grow a shortcut of its own.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes. It reads every byte of the longer one whatever
    /// they hold, so timing says nothing about how much of a secret matched (only its length).
    /// Lengths are compared whole: a length that differs by 256, or any multiple of it, is a
    /// difference (folded into eight bits it was not, and a token with 256 zero bytes more
    /// on its signature verified).
    @inlinable
    public static func equal<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> Bool {
        var difference = UInt(bitPattern: a.count ^ b.count)
        var i = a.startIndex
        var j = b.startIndex
        while i != a.endIndex || j != b.endIndex {
            var x: UInt8 = 0
            var y: UInt8 = 0
            if i != a.endIndex {
                x = a[i]
                a.formIndex(after: &i)
            }
            if j != b.endIndex {
                y = b[j]
                b.formIndex(after: &j)
            }
            difference |= UInt(x ^ y)
        }
        return difference == 0
    }
}
