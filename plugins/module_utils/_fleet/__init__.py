# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet update runs in one private package (not an API of the collection; names may change).

- :mod:`.record`: the run's record and its rules (stages, soak, approval, maintenance window, halting budget, the
  holder's lease), pure functions.
- :mod:`.selection`: stages that select their clusters from the inventory (group, cloud labels), cut into waves.
- :mod:`.store`: the record as a JSON object in S3, read and written with conditional PUTs.
"""
