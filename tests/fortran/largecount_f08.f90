! mpi_f08's large-count forms (MPI-4.0 19.2): the generics take
! INTEGER(KIND=MPI_COUNT_KIND) counts and reach the C library's _c
! functions. A contiguous type of 2**32 + 5 bytes has that size only
! through MPI_Type_contiguous_c and MPI_Type_size_c (an int count would
! keep 5); messages with MPI_COUNT_KIND counts (blocking, nonblocking,
! collectives with count and displacement arrays) are checked for content
! and for their counts (MPI_Get_count_c).
! Prints PASS largecount_f08.

program largecount_f08
  use mpi_f08
  implicit none
  integer, parameter :: ck = MPI_COUNT_KIND, ak = MPI_ADDRESS_KIND
  type(MPI_Datatype) :: huge
  type(MPI_Status) :: st, sts(2)
  type(MPI_Request) :: reqs(2)
  integer :: rank, np, left, right, errs, total, i, ierr, size4
  integer(kind=ck) :: n, size8, got
  integer(kind=ak) :: lb, extent
  integer :: sbuf(7), rbuf(7), b(3), s(2), r(2)
  integer, allocatable :: all(:)
  integer(kind=ck), allocatable :: counts(:)
  integer(kind=ak), allocatable :: displs(:)

  errs = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  left = mod(rank + np - 1, np)
  right = mod(rank + 1, np)

  ! A type bigger than an int can count.
  n = 2_ck**32 + 5
  call MPI_Type_contiguous(n, MPI_BYTE, huge, ierr)
  if (ierr /= MPI_SUCCESS) errs = errs + 1
  call MPI_Type_size(huge, size8)
  if (size8 /= n) errs = errs + 1
  call MPI_Type_size(huge, size4)
  if (size4 /= MPI_UNDEFINED) errs = errs + 1
  call MPI_Type_get_extent(huge, lb, extent)
  if (lb /= 0 .or. extent /= n) errs = errs + 1
  call MPI_Type_free(huge)

  ! Blocking, with MPI_Get_count_c.
  n = 7
  sbuf = [(rank * 1000 + i, i = 1, 7)]
  rbuf = -1
  call MPI_Sendrecv(sbuf, n, MPI_INTEGER, right, 3, rbuf, n, MPI_INTEGER, left, 3, &
                    MPI_COMM_WORLD, st)
  if (any(rbuf /= [(left * 1000 + i, i = 1, 7)])) errs = errs + 1
  call MPI_Get_count(st, MPI_INTEGER, got)
  if (got /= 7) errs = errs + 1
  rbuf = -1
  if (np > 1) then
    if (rank == 0) then
      call MPI_Send(sbuf, n - 2, MPI_INTEGER, 1, 4, MPI_COMM_WORLD)
    else if (rank == 1) then
      call MPI_Recv(rbuf, n, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, st)
      call MPI_Get_count(st, MPI_INTEGER, got)
      if (got /= 5 .or. any(rbuf(1:5) /= [(i, i = 1, 5)]) .or. rbuf(6) /= -1) errs = errs + 1
    end if
  end if

  ! Nonblocking.
  s = [rank, -rank]
  r = 0
  call MPI_Irecv(r, 2_ck, MPI_INTEGER, left, 5, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(s, 2_ck, MPI_INTEGER, right, 5, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, sts)
  if (r(1) /= left .or. r(2) /= -left) errs = errs + 1

  ! Collectives.
  b = 0
  if (rank == 0) b = [9, 8, 7]
  call MPI_Bcast(b, 3_ck, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (any(b /= [9, 8, 7])) errs = errs + 1
  s = [rank, 1]
  call MPI_Allreduce(s, r, 2_ck, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (r(1) /= np * (np - 1) / 2 .or. r(2) /= np) errs = errs + 1
  ! Rank k contributes k + 1 items, all equal to k.
  allocate(all(np * (np + 1) / 2), counts(np), displs(np))
  counts = [(int(i, ck), i = 1, np)]
  displs = [(int(i * (i - 1) / 2, ak), i = 1, np)]
  sbuf = rank
  all = -1
  call MPI_Allgatherv(sbuf, int(rank + 1, ck), MPI_INTEGER, all, counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD)
  do i = 0, np - 1
    if (any(all(i * (i + 1) / 2 + 1:(i + 1) * (i + 2) / 2) /= i)) errs = errs + 1
  end do

  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print '(a)', 'PASS largecount_f08'
  if (rank == 0 .and. total /= 0) print '(a,i0)', 'FAIL largecount_f08: errors ', total
  call MPI_Finalize()
end program largecount_f08
