"""The console's URLs plus one view that fails, for the 500 page's tests."""

from django.urls import path

from console.urls import handler403, handler404, handler500, urlpatterns  # noqa: F401


def boom(request):
    raise RuntimeError("the test's own failure")


urlpatterns = [path("boom/", boom), *urlpatterns]
