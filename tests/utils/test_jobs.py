"""punct.utils.jobs: job shares."""

from __future__ import annotations

import pytest

from punct.utils.jobs import job_share


@pytest.mark.parametrize("n,nj", [(10, 3), (3, 5), (0, 2), (7, 1)])
def test_job_shares_cover_everything_once(n, nj):
    items = list(range(n))
    shares = [job_share(items, j, nj) for j in range(1, nj + 1)]
    assert sum(shares, []) == items
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_job_share_rejects_bad_index():
    with pytest.raises(ValueError, match="--job"):
        job_share([1, 2], 3, 2)


@pytest.mark.parametrize("n,nj", [(10, 3), (3, 5), (0, 2), (7, 1)])
def test_a_lazy_share_is_the_same_and_reads_no_further(n, nj):
    from punct.utils.jobs import job_share_lazy

    for job in range(1, nj + 1):
        read: list[int] = []

        def items(read=read):
            for i in range(n):
                read.append(i)
                yield i

        share = job_share_lazy(items(), job, nj, count=n)
        assert share == job_share(list(range(n)), job, nj)
        assert read == list(range(share[-1] + 1 if share else len(read)))  # nothing after the share's end


def test_in_order_passes_items_in_the_splits_order_and_refuses_others():
    from punct.utils.jobs import in_order

    order = ["a", "b", "c", "d", "e"]
    assert list(in_order(["a", "c", "e"], iter(order), "x", key=str)) == ["a", "c", "e"]  # b, d skipped
    assert list(in_order([], iter(order), "x", key=str)) == []
    for items in (["c", "b"], ["a", "a"], ["a", "z"]):  # out of order, twice, not in the split
        with pytest.raises(ValueError, match="x: .* is not in the split"):
            list(in_order(items, iter(order), "x", key=str))
