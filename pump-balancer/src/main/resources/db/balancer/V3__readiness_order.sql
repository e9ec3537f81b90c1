-- Keys are served in the order they became ready (docs/balancer.md, "Order"). A key's rotation is
-- its place in that order: taken from the sequence when the key joins the rotation (its row is
-- created, its hand-off lease ends, it is unparked, or a message arrives while its last one is
-- being handled), and when one of its turns moves it back behind a key that joined during the
-- lap of the process serving it. joined tells the two apart: true when the place was taken by
-- joining, false when a turn moved the key back. A process's walk looks for keys that joined
-- after its lap began (rotation above the lap's highest, joined) to know that its turns must move
-- keys back; turns of other processes do not make it move its keys.
ALTER TABLE ${flyway:defaultSchema}.partitions ADD COLUMN joined boolean NOT NULL DEFAULT true;
