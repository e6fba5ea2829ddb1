"""The search index says when it has folded more of a workspace (docs/adr/0111).

A search that must answer as of a seq the index has not reached yet waits for it; the
gateway polled the checkpoint every 5 ms to learn when. Now every change of a checkpoint
notifies the channel ``search_checkpoint`` with ``"<workspace_id> <seq>"``. Postgres sends
a notification when the transaction that made it commits (never for one rolled back), so a
gateway listening on the channel learns of a fold the moment it is visible, and a wait ends
at once. A checkpoint written again with the seq it had (the locked fold's insert of a
missing row does so) notifies nothing.

Revision ID: 1580
Revises: 1570
"""

from alembic import op

revision = "1580"
down_revision = "1570"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION search_checkpoint_notify() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' OR NEW.seq IS DISTINCT FROM OLD.seq THEN
                PERFORM pg_notify('search_checkpoint', NEW.workspace_id || ' ' || NEW.seq);
            END IF;
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER search_checkpoint_notify"
        " AFTER INSERT OR UPDATE OF seq ON search_checkpoints"
        " FOR EACH ROW EXECUTE FUNCTION search_checkpoint_notify()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER search_checkpoint_notify ON search_checkpoints")
    op.execute("DROP FUNCTION search_checkpoint_notify()")
