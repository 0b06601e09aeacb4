"""Scripts/chaos: processes, members and checks, scenarios."""
