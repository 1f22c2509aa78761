"""The compiled inner loops of BM25 search (numba, no fastmath: IEEE double additions in query-term order,
so scores are bit-identical to the reference sums in bm25.py).

A query walks only its terms' postings, each posting's weight (its term's idf times its tf part) computed at
index time with numpy's double arithmetic: scores accumulate into a per-thread scratch array, the touched pages
are remembered, and the top k is selected among them with a bounded heap; the scratch is reset by walking the
touched pages again. Nothing per query is proportional to the collection's size. Plain numpy + numba: no
Django import.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _accumulate(indptr, rows, weights, terms, positive, acc, mark, touched):
    """Add each query term's posting weights to their pages, term by term in query order (the order rank-bm25
    and a column-by-column sum use); returns how many pages were touched, listed in `touched` (one slot more
    than there are pages).

    With `positive` (every weight > 0, always so for lucene) a page is new while its sum is still 0.0, noted
    without a branch; otherwise `mark` flags the pages seen."""
    n = 0
    for i in range(terms.shape[0]):
        t = terms[i]
        if positive:
            for p in range(indptr[t], indptr[t + 1]):
                r = rows[p]
                touched[n] = r
                n += acc[r] == 0.0
                acc[r] += weights[p]
        else:
            for p in range(indptr[t], indptr[t + 1]):
                r = rows[p]
                if mark[r] == 0:
                    mark[r] = 1
                    acc[r] = 0.0
                    touched[n] = r
                    n += 1
                acc[r] += weights[p]
    return n


@njit(cache=True, nogil=True)
def dense_scores(indptr, rows, weights, terms, size):
    """Every page's score for the query, 0.0 where no term matches (Hybrid fusion and reranking read it)."""
    out = np.zeros(size, dtype=np.float64)
    for i in range(terms.shape[0]):
        t = terms[i]
        for p in range(indptr[t], indptr[t + 1]):
            out[rows[p]] += weights[p]
    return out


@njit(cache=True, nogil=True, inline="always")
def _order_key(score, rank, cell, cell_bits):
    """One unsigned integer that sorts as trec_eval ranks: the 32-bit score (positive floats order as their
    bit patterns), then the id's rank (trec_eval sorts ids descending, so the higher rank comes first).
    `cell` is a one-float32 array, `cell_bits` its uint32 view: the bit cast."""
    cell[0] = np.float32(score)
    return (np.uint64(cell_bits[0]) << np.uint64(32)) | np.uint64(rank)


@njit(cache=True, nogil=True, inline="always")
def _offer(heap_key, heap_item, heap_score, size, key, item, score):
    """Offer a candidate to a min-heap of the best so far (full when size == capacity); returns the new size."""
    capacity = heap_key.shape[0]
    if size < capacity:  # sift up
        at = size
        size += 1
        while at > 0:
            parent = (at - 1) // 2
            if key >= heap_key[parent]:
                break
            heap_key[at], heap_item[at], heap_score[at] = (
                heap_key[parent],
                heap_item[parent],
                heap_score[parent],
            )
            at = parent
    elif key > heap_key[0]:
        at = _sift_down(heap_key, heap_item, heap_score, size, key)
    else:
        return size
    heap_key[at], heap_item[at], heap_score[at] = key, item, score
    return size


@njit(cache=True, nogil=True, inline="always")
def _sift_down(heap_key, heap_item, heap_score, size, key):
    """Make room for `key` from the root down; returns where it goes."""
    at = 0
    while True:
        child = 2 * at + 1
        if child >= size:
            return at
        if child + 1 < size and heap_key[child + 1] < heap_key[child]:
            child += 1
        if heap_key[child] >= key:
            return at
        heap_key[at], heap_item[at], heap_score[at] = heap_key[child], heap_item[child], heap_score[child]
        at = child


@njit(cache=True, nogil=True)
def _drain(heap_key, heap_item, heap_score, size):
    """The heap's items and scores, best first (the heap is consumed)."""
    items = np.empty(size, dtype=np.int64)
    scores = np.empty(size, dtype=np.float64)
    while size > 0:
        size -= 1
        items[size], scores[size] = heap_item[0], heap_score[0]
        key, item, score = heap_key[size], heap_item[size], heap_score[size]
        at = _sift_down(heap_key, heap_item, heap_score, size, key)
        heap_key[at], heap_item[at], heap_score[at] = key, item, score
    return items, scores


@njit(cache=True, nogil=True)
def top_documents(
    indptr,
    rows,
    weights,
    terms,
    live,
    positive,
    page_document,
    id_rank,
    depth,
    acc,
    mark,
    touched,
    doc_list,
    doc_best,
    doc_page,
    doc_mark,
):
    """The `depth` best documents for the query, each scored by its best page, in trec_eval's order (32-bit
    score descending, then id descending). Returns (documents, scores, best pages).

    Pages scoring 0 or less are not results; `live` (empty, or a flag per page) drops the pages it clears
    (deletions, time filters). With `page_document` empty every page is its own document, offered to the
    heap as it is read; otherwise pages are first reduced to their document's best. The scratch arrays (acc,
    mark, touched per page; doc_* per document) are left as they were found: all zero."""
    postings = 0
    for i in range(terms.shape[0]):
        postings += indptr[terms[i] + 1] - indptr[terms[i]]
    pages = acc.shape[0]
    # A query whose postings outnumber a quarter of the pages touches most of them: then every page is
    # visited once in order (no list of touched pages), which costs no more than the postings themselves.
    sweep = 4 * postings >= pages
    if sweep:
        for i in range(terms.shape[0]):
            t = terms[i]
            for p in range(indptr[t], indptr[t + 1]):
                acc[rows[p]] += weights[p]
        n = pages
    else:
        n = _accumulate(indptr, rows, weights, terms, positive, acc, mark, touched)
    check_live = live.shape[0] > 0
    per_page = page_document.shape[0] == 0
    capacity = max(0, min(depth, n))
    heap_key = np.empty(capacity, dtype=np.uint64)
    heap_item = np.empty(capacity, dtype=np.int64)
    heap_score = np.empty(capacity, dtype=np.float64)
    size = 0
    floor = np.float32(-1.0)  # the weakest score in a full heap: most candidates stop at this comparison
    cell = np.zeros(1, dtype=np.float32)
    cell_bits = cell.view(np.uint32)
    count = 0
    for j in range(n):
        r = j if sweep else touched[j]
        if not positive:
            mark[r] = 0
        s = acc[r]
        acc[r] = 0.0
        if not s > 0.0 or (check_live and not live[r]):
            continue
        if per_page:
            if np.float32(s) < floor or capacity == 0:
                continue
            size = _offer(
                heap_key, heap_item, heap_score, size, _order_key(s, id_rank[r], cell, cell_bits), r, s
            )
            if size == capacity:
                floor = np.float32(heap_score[0])
            continue
        d = page_document[r]
        if doc_mark[d] == 0:
            doc_mark[d] = 1
            doc_best[d] = s
            doc_page[d] = r
            doc_list[count] = d
            count += 1
        elif s > doc_best[d] or (s == doc_best[d] and r < doc_page[d]):
            doc_best[d] = s
            doc_page[d] = r
    for j in range(count):
        d = doc_list[j]
        doc_mark[d] = 0
        if np.float32(doc_best[d]) < floor or capacity == 0:
            continue
        size = _offer(
            heap_key,
            heap_item,
            heap_score,
            size,
            _order_key(doc_best[d], id_rank[d], cell, cell_bits),
            d,
            doc_best[d],
        )
        if size == capacity:
            floor = np.float32(heap_score[0])
    documents, scores = _drain(heap_key, heap_item, heap_score, size)
    best_pages = documents.copy() if per_page else doc_page[documents]
    return documents, scores, best_pages


@njit(cache=True, nogil=True, inline="always")
def _advance(rows, at, end, target):
    """The first position in rows[at:end] (ascending) whose row is >= target: galloping, then binary search."""
    if at >= end or rows[at] >= target:
        return at
    step = 1
    low = at
    high = at + 1
    while high < end and rows[high] < target:
        low = high
        step *= 2
        high = at + step
    if high > end:
        high = end
    while low < high:  # rows[low] < target; find the first >= target in (low, high]
        middle = (low + high) // 2
        if rows[middle] < target:
            low = middle + 1
        else:
            high = middle
    return low


@njit(cache=True, nogil=True)
def top_pages_pruned(
    indptr, rows, weights, term_max, terms, live, id_rank, depth, acc, mark, touched, values
):
    """top_documents for collections of one page per document whose weights are all positive (every lucene
    index), skipping most of the postings of common words (score-at-a-time pruning, Moffat & Zobel 1996):

    1. terms are read rarest-weight-first; every page met becomes a candidate, until the k-th best partial
       sum exceeds what the terms not read yet could add to a page at most: then no page not yet met can
       enter the top k, and each remaining term is only looked up for the candidates (a galloping search in
       its postings) instead of read whole; candidates that can no longer reach the k-th best are dropped;
    2. the partial sums, added in that order, are within a few ulps of the exact ones: every candidate
       within a relative 1e-9 of the k-th best is re-scored exactly (its weights added in query-term order
       from 0.0, as everywhere else) and the top k is taken on the exact 32-bit keys and the id tie-break.
    So the result is exactly the unpruned one. Scratch (acc, mark, touched, values: per page) is left with
    acc and mark all zero."""
    m = terms.shape[0]
    if m == 0 or depth <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64)
    bound = np.empty(m, dtype=np.float64)
    for i in range(m):
        bound[i] = term_max[terms[i]]
    order = np.argsort(-bound, kind="mergesort")  # the largest possible contribution first
    rest = np.zeros(m, dtype=np.float64)  # rest[j]: what the terms after order[j] can add, at most
    total = 0.0
    for j in range(m - 1, -1, -1):
        rest[j] = total * (1.0 + 1e-9)
        total += bound[order[j]]
    check_live = live.shape[0] > 0
    n = 0
    expanding = True
    threshold = 0.0
    read = 0.0
    for j in range(m):
        i = order[j]
        t = terms[i]
        lo, hi = indptr[t], indptr[t + 1]
        if expanding:
            # every weight is positive: a page is new while its sum is 0.0 (no branch: the memory reads of
            # many postings overlap); pages that are not live are dropped when the candidates are taken
            for p in range(lo, hi):
                r = rows[p]
                touched[n] = r
                n += acc[r] == 0.0
                acc[r] += weights[p]
            read += bound[i]
            # The k-th best partial sum is at most `read` (what the terms read so far can give): only when
            # that exceeds what the rest can add is the k-th best worth computing.
            if n >= depth and j + 1 < m and rest[j] < read:
                # The first pages met are those of the rarest terms, the best partial sums: the k-th best
                # among the first few thousand is a lower bound of the k-th best of all, at a fraction of
                # the cost.
                threshold = _kth_largest(acc, touched, min(n, 16384), depth, values) * (1.0 - 1e-9)
                if rest[j] < threshold:
                    expanding = False
                    n = _drop_hopeless(acc, mark, touched, n, rest[j], threshold, live)
                    touched[:n].sort()  # row order, for the lookups
        elif (hi - lo) > 32 * n:  # few candidates in a long list: gallop to each
            at = lo
            for c in range(n):
                r = touched[c]
                at = _advance(rows, at, hi, r)
                if at < hi and rows[at] == r:
                    acc[r] += weights[at]
        else:  # candidates dense in the list: one merge of the two sorted sequences
            at = lo
            for c in range(n):
                r = touched[c]
                while at < hi and rows[at] < r:
                    at += 1
                if at < hi and rows[at] == r:
                    acc[r] += weights[at]
        if not expanding and j + 1 < m and n > depth:
            threshold = max(threshold, _kth_largest(acc, touched, n, depth, values) * (1.0 - 1e-9))
            n = _drop_hopeless(acc, mark, touched, n, rest[j], threshold, live)
    if expanding and check_live:  # not switched: the pages that are not live are still among the candidates
        n = _drop_hopeless(acc, mark, touched, n, 0.0, -np.inf, live)
    # the candidates near or above the k-th best, re-scored exactly
    cut = _kth_largest(acc, touched, n, depth, values) * (1.0 - 1e-9) if n > depth else -np.inf
    heap_key = np.empty(depth, dtype=np.uint64)
    heap_item = np.empty(depth, dtype=np.int64)
    heap_score = np.empty(depth, dtype=np.float64)
    cell = np.zeros(1, dtype=np.float32)
    cell_bits = cell.view(np.uint32)
    size = 0
    for c in range(n):
        r = touched[c]
        approximate = acc[r]
        acc[r] = 0.0
        mark[r] = 0
        if approximate < cut:
            continue
        s = 0.0
        for i in range(m):  # query order, from 0.0
            t = terms[i]
            at = _advance(rows, indptr[t], indptr[t + 1], r)
            if at < indptr[t + 1] and rows[at] == r:
                s += weights[at]
        if s > 0.0:
            size = _offer(
                heap_key, heap_item, heap_score, size, _order_key(s, id_rank[r], cell, cell_bits), r, s
            )
    documents, scores = _drain(heap_key, heap_item, heap_score, size)
    return documents, scores, documents.copy()


@njit(cache=True, nogil=True)
def _kth_largest(acc, touched, n, k, values):
    """The k-th largest of acc over touched[:n] (the smallest when n < k), selected in place in the scratch
    `values` (Hoare's quickselect: no allocation)."""
    if n == 0:
        return 0.0
    for c in range(n):
        values[c] = acc[touched[c]]
    target = n - min(k, n)  # the k-th largest is the (n - k)-th smallest
    lo, hi = 0, n - 1
    while lo < hi:
        pivot = values[(lo + hi) // 2]
        i, j = lo, hi
        while i <= j:
            while values[i] < pivot:
                i += 1
            while values[j] > pivot:
                j -= 1
            if i <= j:
                values[i], values[j] = values[j], values[i]
                i += 1
                j -= 1
        if target <= j:
            hi = j
        elif target >= i:
            lo = i
        else:
            break
    return values[target]


@njit(cache=True, nogil=True)
def _drop_hopeless(acc, mark, touched, n, rest, threshold, live):
    """Keep the live candidates that could still reach the threshold (in order); reset the others' scratch."""
    kept = 0
    check_live = live.shape[0] > 0
    for c in range(n):
        r = touched[c]
        if acc[r] + rest >= threshold and (not check_live or live[r]):
            touched[kept] = r
            kept += 1
        else:
            acc[r] = 0.0
            mark[r] = 0
    return kept
