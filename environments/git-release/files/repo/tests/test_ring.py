from hashring import HashRing


def test_same_key_same_node():
    ring = HashRing()
    ring.add("a")
    ring.add("b")
    assert ring.lookup("user:42") == ring.lookup("user:42")


def test_removing_a_node_only_moves_its_keys():
    ring = HashRing()
    for node in "abc":
        ring.add(node)
    before = {k: ring.lookup(f"k{k}") for k in range(500)}
    ring.remove("c")
    after = {k: ring.lookup(f"k{k}") for k in range(500)}
    assert all(after[k] == before[k] for k in before if before[k] != "c")
