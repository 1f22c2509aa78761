from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """Page-number pagination: ?page=N&page_size=M (at most 1000), DRF's {count, next, previous, results}."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000
