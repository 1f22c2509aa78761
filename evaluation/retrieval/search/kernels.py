"""The compiled inner loops of BM25 search (numba, no fastmath: IEEE double additions in query-term order,
so scores are bit-identical to the reference sums in bm25.py).

A query walks only its terms' postings, each posting's weight its term's idf times the tf part of its code
(postings.py: the posting's (tf, page length) pair, whose tf parts bm25.tf_parts computes with numpy's double
arithmetic, exactly as it would per posting), and adds them into a per-thread scratch array (never allocated
per query). When the postings are few, the pages they touch are listed as they are met and only those are read
back; when they outnumber a quarter of the pages, every page is read back in order instead (no more work than
the postings themselves), through a threshold read off a sample of the pages when the collection is large
(for pages and for documents of several pages alike). The query's common terms (those on at least a quarter of
the pages, when the index keeps them as dense rows of codes, code 0 and so a weight of 0.0 where a page lacks
the term) are then added page after page, a loop the compiler vectorizes, instead of posting by posting: adding 0.0 leaves a sum's bits
as they were, so the sums are the same. Page numbers read from arrays index as unsigned integers: numba then
leaves out its negative-index check.
The top k is kept in a small heap keyed on trec_eval's order; the scratch is left zeroed. Plain numpy +
numba: no Django import.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _accumulate(indptr, rows, codes, parts, idf, terms, positive, acc, mark, touched):
    """Add each query term's posting weights to their pages, term by term in query order (the order rank-bm25
    and a column-by-column sum use); returns how many pages were touched, listed in `touched` (one slot more
    than there are pages).

    With `positive` (every weight > 0, always so for lucene) a page is new while its sum is still 0.0, noted
    without a branch; otherwise `mark` flags the pages seen."""
    n = 0
    for i in range(terms.shape[0]):
        t = terms[i]
        w = idf[t]
        if positive:
            for p in range(indptr[t], indptr[t + 1]):
                r = np.uint64(rows[p])
                touched[n] = r
                n += acc[r] == 0.0
                acc[r] += w * parts[np.uint64(codes[p])]
        else:
            for p in range(indptr[t], indptr[t + 1]):
                r = np.uint64(rows[p])
                if mark[r] == 0:
                    mark[r] = 1
                    acc[r] = 0.0
                    touched[n] = r
                    n += 1
                acc[r] += w * parts[np.uint64(codes[p])]
    return n


SAMPLE_STRIDE = 64


@njit(cache=True, nogil=True)
def _kth_largest(values, k):
    """The k-th largest of values (1 <= k <= len(values)), through a min-heap of the k largest so far: one
    comparison for most values (numba's np.partition is far slower for a small k)."""
    heap = np.empty(k, dtype=values.dtype)
    for i in range(k):  # sift up
        value = values[i]
        at = i
        while at > 0:
            parent = (at - 1) >> 1
            if heap[parent] <= value:
                break
            heap[at] = heap[parent]
            at = parent
        heap[at] = value
    for i in range(k, values.shape[0]):
        value = values[i]
        if value <= heap[0]:
            continue
        at = 0  # sift down from the root, which value replaces
        while True:
            child = 2 * at + 1
            if child >= k:
                break
            if child + 1 < k and heap[child + 1] < heap[child]:
                child += 1
            if heap[child] >= value:
                break
            heap[at] = heap[child]
            at = child
        heap[at] = value
    return heap[0]


@njit(cache=True, nogil=True)
def _above_sampled_threshold(acc, live, page_document, depth, spread, listed, doc_mark, doc_list, stride):
    """List, in row order into listed[:n], the live pages whose sum may place them (or their document) in the
    top `depth`; acc is left as it is. -1 when the sample's threshold kept too few.

    The threshold is the sample's (2 depth spread / stride + 8)-th best sum (every stride-th page; `spread`
    the pages a document has on average), lowered by a relative 1e-7. At least `depth` documents (pages,
    without page_document) have a listed page above the unlowered threshold, so the depth-th best document
    scores above it; a page kept out has a sum at or below the lowered one, so it can neither reach nor tie in
    32 bits the depth-th best's key, nor be its document's best page where that document could."""
    pages = acc.shape[0]
    sample = acc[::stride]
    rank = min(len(sample), 2 * depth * spread // stride + 8)
    threshold = _kth_largest(sample, rank)
    if not threshold > 0.0:
        return -1
    lowered = threshold * (1.0 - 1e-7)
    check_live = live.shape[0] > 0
    per_page = page_document.shape[0] == 0
    n = 0
    above = 0  # pages (documents) with a page above the unlowered threshold
    for r in range(pages):
        s = acc[r]
        if s > lowered:
            if check_live and not live[r]:
                continue
            listed[n] = r
            n += 1
            if s > threshold:
                if per_page:
                    above += 1
                else:
                    d = page_document[r]
                    if doc_mark[d] == 0:
                        doc_mark[d] = 1
                        doc_list[above] = d
                        above += 1
    if not per_page:
        for j in range(above):
            doc_mark[doc_list[j]] = 0
    return n if above >= depth else -1


@njit(cache=True, nogil=True)
def _add_all(indptr, rows, codes, parts, idf, terms, common_terms, common_codes, acc):
    """acc += every query term's weights, term by term in query order: a common term's dense row page by page,
    any other term's postings one by one."""
    pages = common_codes.shape[1]
    for i in range(terms.shape[0]):
        t = terms[i]
        w = idf[t]
        j = np.searchsorted(common_terms, t)
        if j < common_terms.shape[0] and common_terms[j] == t:
            row = common_codes[j]
            for r in range(pages):
                acc[r] += w * parts[np.uint64(row[r])]
        else:
            for p in range(indptr[t], indptr[t + 1]):
                acc[np.uint64(rows[p])] += w * parts[np.uint64(codes[p])]


@njit(cache=True, nogil=True)
def dense_scores(indptr, rows, codes, parts, idf, common_terms, common_codes, terms, size):
    """Every page's score for the query, 0.0 where no term matches (Hybrid fusion and reranking read it)."""
    out = np.zeros(size, dtype=np.float64)
    _add_all(indptr, rows, codes, parts, idf, terms, common_terms, common_codes, out)
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
    codes,
    parts,
    idf,
    common_terms,
    common_codes,
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
    if depth <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64)
    # A query whose postings outnumber a quarter of the pages touches most of them: then every page is
    # visited once in order (no list of touched pages), which costs no more than the postings themselves.
    sweep = 4 * postings >= pages
    if sweep:
        _add_all(indptr, rows, codes, parts, idf, terms, common_terms, common_codes, acc)
        n = pages
    else:
        n = _accumulate(indptr, rows, codes, parts, idf, terms, positive, acc, mark, touched)
    check_live = live.shape[0] > 0
    per_page = page_document.shape[0] == 0
    listed = False  # the candidates are listed in touched[:n]; the other pages' sums are zeroed at the end
    if sweep and pages >= 64 * depth:
        # Most pages were met: rather than read every one (and offer it to the heap or to its document), keep
        # those above a threshold that a sample of the pages says only a few hundred exceed.
        stride = max(4, min(SAMPLE_STRIDE, pages // (16 * depth)))
        spread = 1 if per_page else -(-page_document.shape[0] // max(1, id_rank.shape[0]))
        n_listed = _above_sampled_threshold(
            acc, live, page_document, depth, spread, touched, doc_mark, doc_list, stride
        )
        if n_listed >= 0:
            sweep, listed = False, True
            n = n_listed
    capacity = max(0, min(depth, n))
    heap_key = np.empty(capacity, dtype=np.uint64)
    heap_item = np.empty(capacity, dtype=np.int64)
    heap_score = np.empty(capacity, dtype=np.float64)
    size = 0
    # A page needs a score above `floor`: 0.0, then, once the heap is full, a double a hair (1e-7, four times
    # float32's rounding) under its weakest 32-bit key, so that the test is one double comparison and never
    # drops a page whose 32-bit key could tie or beat that key (the heap decides those exactly).
    floor = 0.0
    cell = np.zeros(1, dtype=np.float32)
    cell_bits = cell.view(np.uint32)
    count = 0
    for j in range(n):
        r = j if sweep else touched[j]
        s = acc[r]
        acc[r] = 0.0
        if not positive and not sweep:
            mark[r] = 0
        if s <= floor or (check_live and not live[r]):
            continue
        if per_page:
            size = _offer(
                heap_key, heap_item, heap_score, size, _order_key(s, id_rank[r], cell, cell_bits), r, s
            )
            if size == capacity:
                floor = np.float64(np.float32(heap_score[0])) * (1.0 - 1e-7)
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
    if listed:
        acc[:pages] = 0.0  # the pages not listed
    for j in range(count):
        d = doc_list[j]
        doc_mark[d] = 0
        if doc_best[d] <= floor:
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
            floor = np.float64(np.float32(heap_score[0])) * (1.0 - 1e-7)
    documents, scores = _drain(heap_key, heap_item, heap_score, size)
    best_pages = documents.copy() if per_page else doc_page[documents]
    return documents, scores, best_pages
