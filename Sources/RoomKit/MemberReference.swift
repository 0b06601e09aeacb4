/// What a hub names a member by in its rooms' machines (`RoomMachine<MemberReference>`): a
/// reference to the hub's own member object, which RoomKit cannot name.
///
/// RoomKit compiles the machine for this one type (`@_specialize` on `RoomMachine.step`), so a
/// hub in another module runs that specialized step. Called with a type of the hub's, the step
/// would run generic code that looks up its effects' and events' type metadata at run time:
/// some 60 instructions more per delivery (docs/benchmarks-log.md, 2026-11-28).
package struct MemberReference: @unchecked Sendable {
    /// The hub's member; only the hub's own loop-confined code reads it.
    package let object: AnyObject

    package init(_ object: AnyObject) { self.object = object }
}
