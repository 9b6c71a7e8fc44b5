"""Okapi BM25 over SKILL passages (the BM25-RAG baseline).

score(q, d) = sum over query terms t of
    idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
with idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)) (the non-negative variant used by
Lucene), k1 = 1.2, b = 0.75. Terms are the stems of ``workbench.audit.text``. A query term
repeated in the query counts once per occurrence, as in the original formula.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from workbench.audit.text import stems


class BM25:
    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tf: list[Counter[str]] = [Counter(stems(d)) for d in documents]
        self.length = [sum(c.values()) for c in self.tf]
        self.n = len(documents)
        self.avgdl = (sum(self.length) / self.n) if self.n else 0.0
        df = Counter(t for c in self.tf for t in c)
        self.idf = {
            t: math.log(1.0 + (self.n - nt + 0.5) / (nt + 0.5)) for t, nt in df.items()
        }
        # Inverted index: score only documents that share a term with the query.
        self.postings: dict[str, list[int]] = {}
        for i, c in enumerate(self.tf):
            for t in c:
                self.postings.setdefault(t, []).append(i)

    def scores(self, query: str) -> dict[int, float]:
        out: dict[int, float] = {}
        k1, b, avg = self.k1, self.b, self.avgdl or 1.0
        for t in stems(query):
            idf = self.idf.get(t)
            if idf is None:
                continue
            for i in self.postings[t]:
                f = self.tf[i][t]
                denom = f + k1 * (1 - b + b * self.length[i] / avg)
                out[i] = out.get(i, 0.0) + idf * f * (k1 + 1) / denom
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (document index, score), score > 0, ties by document order."""
        sc = self.scores(query)
        return sorted(sc.items(), key=lambda x: (-x[1], x[0]))[:k]
