"""/api/v1/queues: the drained queues."""

from ninja import Query, Router

from dlq.api.base import ERRORS
from dlq.health import queues
from dlq.schemas.filters import QueueQuery
from dlq.schemas.messages import QueueList

router = Router()


# The operation id it had before the API moved into a package: generated clients name it.
@router.get("", response={200: QueueList, **ERRORS}, operation_id="dlq_api_list_queues")
def list_queues(request, params: Query[QueueQuery]):
    """Drained queues: parked count, depth on the broker (null if unknown), last arrival;
    `vhost` keeps one vhost's."""
    return {"results": queues.queue_overview(vhost=params.vhost)}
