"""Issue 16 item 15: a run that waited for the lock while another wrote the spec plans again on it; it fails only
for the fields it sets that the other run changed in between (kops_spec.changed_meanwhile)."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import changed_meanwhile, diff_paths

READ = {"spec": {"minSize": 1, "maxSize": 1, "cloudLabels": {"team": "platform"}}}


def test_other_fields_changed_meanwhile_are_no_conflict():
    """Issue input: one run scales the group (minSize/maxSize), the other changed the cluster's cloud labels."""
    desired = {"spec": {"minSize": 3, "maxSize": 3, "cloudLabels": {"team": "platform"}}}
    now = {"spec": {"minSize": 1, "maxSize": 1, "cloudLabels": {"team": "platform", "cost-center": "42"}}}
    replanned_desired = {"spec": {"minSize": 3, "maxSize": 3, "cloudLabels": {"team": "platform", "cost-center": "42"}}}
    assert changed_meanwhile(diff_paths(READ, desired), diff_paths(now, replanned_desired)) == []


def test_a_field_this_run_sets_changed_meanwhile_is_named():
    desired = {"spec": {"minSize": 5, "maxSize": 5, "cloudLabels": {"team": "platform"}}}
    now = {"spec": {"minSize": 1, "maxSize": 7, "cloudLabels": {"team": "platform"}}}
    assert changed_meanwhile(diff_paths(READ, desired), diff_paths(now, desired)) == ["spec.maxSize (was 1 when this run read it, now 7; this run sets 5)"]
    # the other run set the same value: nothing left to change there, no conflict
    same = {"spec": {"minSize": 5, "maxSize": 1, "cloudLabels": {"team": "platform"}}}
    assert changed_meanwhile(diff_paths(READ, desired), diff_paths(same, desired)) == []


def test_maps_added_whole_meet_only_on_the_same_key():
    """Variant: both runs add cloud labels to a cluster that had none: different keys merge, the same key is named."""
    read = {"spec": {}}
    mine = {"spec": {"cloudLabels": {"team": "a"}}}
    other_key = {"spec": {"cloudLabels": {"owner": "b"}}}
    assert changed_meanwhile(diff_paths(read, mine), diff_paths(other_key, {"spec": {"cloudLabels": {"owner": "b", "team": "a"}}})) == []
    same_key = {"spec": {"cloudLabels": {"team": "b"}}}
    assert changed_meanwhile(diff_paths(read, mine), diff_paths(same_key, mine)) == [
        "spec.cloudLabels.team (was None when this run read it, now b; this run sets a)"
    ]
