"""ROC AUC of scores against binary labels (no scikit-learn on Debian's
python3 here)."""

import numpy as np

__all__ = ["roc_auc"]


def roc_auc(labels, scores):
    """The area under the ROC curve: the probability that a random positive
    scores above a random negative, ties counting one half (the
    Mann-Whitney U statistic over n_pos * n_neg). O(n log n).

    Raises ValueError when the labels are not all 0 / 1 or when one class
    is absent (the AUC is then undefined).
    """
    labels = np.asarray(labels).ravel()
    scores = np.asarray(scores, np.float64).ravel()
    if labels.shape != scores.shape:
        raise ValueError(f"{labels.size} labels but {scores.size} scores")
    positive = labels == 1
    if not np.all(positive | (labels == 0)):
        raise ValueError("labels must be 0 or 1")
    n_pos = int(positive.sum())
    n_neg = labels.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"AUC needs both classes: {n_pos} positives, "
                         f"{n_neg} negatives")
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    # 1-based ranks, each tie group getting the mean of its ranks.
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]
    mean_rank = (starts + 1 + ends) / 2.0
    ranks = np.empty(scores.size)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    u = ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))
