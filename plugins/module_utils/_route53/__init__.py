# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Route53 and DNS in one private package (not an API of the collection; names may change).

- :mod:`.zones`: hosted zones, records, changes and waits for a delegation.
- :mod:`.dns_names`: DNS name rules (RFC 1035), pure.
- :mod:`.dns_check`: the delegation verified through real DNS queries (dnspython).
"""
