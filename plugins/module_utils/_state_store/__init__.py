# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kOps state store, in one private package (not an API of the collection; names may change).

- :mod:`.url`: the ``s3://BUCKET[/PATH]`` / ``file://PATH`` URL: parsing, its canonical form, the rule of a valid one;
- :mod:`.layout`: where kops keeps a cluster's objects (``<cluster>/config``, ``<cluster>/instancegroup/<ig>``);
- :mod:`.s3`: the S3 client (with retries) and S3's error codes (a missing key, a busy conditional PUT);
- :mod:`.reader`: reading clusters without kops (concurrent S3 reads, ``file://`` stores, the spec copy of check
  mode's preview);
- :mod:`.summary`: host variables of a stored cluster (inventory plugin, info modules);
- :mod:`.lock`: versioning check, object versions for roll-back, spec fingerprint, the per-cluster lock;
- :mod:`.guard`: :class:`~.guard.StoreGuard`, what every kops module does around a run that may write.
"""
